/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin watcher, the desired and actual states and the reconciler: see pluginmanager.h. */

#include "pluginmanager/pluginmanager.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "grpc/client.h"
#include "pluginregistration.pb-c.h"

#define RECONCILE_PERIOD_USEC (1 * USEC_PER_SEC)
#define GET_INFO_TIMEOUT_USEC (1 * USEC_PER_SEC)
#define NOTIFY_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define RETRY_MIN_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)
#define MAX_DEPTH 16
#define MAX_HANDLERS 8
#define MAX_SOCKETS 1024

struct attempt;

/* a socket of the desired state */
struct socket_entry {
        struct socket_entry *prev, *next;
        char *path;
        uint64_t generation;
        struct attempt *attempt; /* a registration in flight */
        uint64_t retry_at;       /* monotonic: not before */
        uint64_t delay;
};

/* a registered plugin (the actual state) */
struct plugin {
        struct plugin *prev, *next;
        char *path;
        uint64_t generation;
        const struct pluginmanager_handler *handler;
        char *name;
        char *endpoint; /* for deregister_endpoint */
};

struct attempt {
        struct pluginmanager *pm;
        struct attempt *prev, *next; /* in pm->attempts, in pm->zombies once over */
        struct socket_entry *sock;   /* NULL once the socket went away */
        char *path;
        uint64_t generation;
        struct grpc_client *grpc;
        const struct pluginmanager_handler *handler;
        char *name, *endpoint;
        char **versions;
        bool registering; /* the handler's register_plugin is running */
        bool failed;
};

struct watch {
        int wd;
        char *path;
};

struct pluginmanager {
        struct event_base *base;
        char *dir;
        struct pluginmanager_handler handlers[MAX_HANDLERS];
        size_t n_handlers;
        int ifd;
        struct event *ev_inotify, *ev_tick, *ev_kick, *ev_reap;
        struct watch *watches;
        size_t n_watches;
        struct socket_entry *sockets;
        size_t n_sockets;
        uint64_t next_generation;
        struct plugin *plugins;
        struct attempt *attempts; /* in flight */
        struct attempt *zombies;  /* over, freed by the reaper (maybe from inside their own client's callback) */
};

/* ---------------------------------------------------------------- attempts */

static void attempt_free(struct attempt *a) {
        if (!a)
                return;
        a->grpc = grpc_client_free(a->grpc);
        free(a->path);
        free(a->name);
        free(a->endpoint);
        strv_free(a->versions);
        free(a);
}

/* the attempt is over (we may be inside a callback of its gRPC client): free it from the reaper */
static void attempt_end(struct attempt *a, bool failed) {
        struct pluginmanager *pm = a->pm;

        if (a->sock) {
                a->sock->attempt = NULL;
                if (failed) {
                        a->sock->delay = a->sock->delay ? MIN(a->sock->delay * 2, (uint64_t) RETRY_MAX_USEC)
                                                        : RETRY_MIN_USEC;
                        a->sock->retry_at = now_usec() + a->sock->delay;
                } else
                        a->sock->delay = 0;
        }
        a->sock = NULL;
        DLIST_REMOVE(pm->attempts, a);
        DLIST_PREPEND(pm->zombies, a);
        event_active(pm->ev_reap, EV_TIMEOUT, 0);
}

static void reap(evutil_socket_t fd, short what, void *userdata) {
        struct pluginmanager *pm = userdata;
        while (pm->zombies) {
                struct attempt *a = pm->zombies;
                DLIST_REMOVE(pm->zombies, a);
                attempt_free(a);
        }
}

static void on_notified(const struct grpc_reply *reply, void *userdata) {
        struct attempt *a = userdata;

        if (reply->r < 0)
                log_error("RegisterPlugin error -- failed to send registration status at socket %s, err: %s", a->path,
                          reply->message);
        attempt_end(a, a->failed);
}

/* NotifyRegistrationStatus, then the attempt ends */
static void notify(struct attempt *a, bool registered, const char *error) {
        Pluginregistration__RegistrationStatus st = PLUGINREGISTRATION__REGISTRATION_STATUS__INIT;

        a->failed = !registered;
        if (error)
                log_error("%s", error);
        st.plugin_registered = registered;
        st.error = (char *) strempty(error);
        if (grpc_call(a->grpc, "/pluginregistration.Registration/NotifyRegistrationStatus", &st.base,
                      &pluginregistration__registration_status_response__descriptor, NOTIFY_TIMEOUT_USEC, on_notified,
                      a, NULL) < 0)
                attempt_end(a, a->failed);
}

static struct plugin *plugin_find(struct pluginmanager *pm, const char *path) {
        for (struct plugin *p = pm->plugins; p; p = p->next)
                if (streq(p->path, path))
                        return p;
        return NULL;
}

static void plugin_remove(struct pluginmanager *pm, struct plugin *p) {
        DLIST_REMOVE(pm->plugins, p);
        free(p->path);
        free(p->name);
        free(p->endpoint);
        free(p);
}

static void on_registered(int r, const char *error, void *userdata) {
        struct attempt *a = userdata;
        _cleanup_free_ char *msg = NULL;

        a->registering = false;
        if (r >= 0) {
                log_info("plugin %s (%s) registered from socket %s", a->name, a->handler->type, a->path);
                notify(a, true, NULL);
                return;
        }
        if (asprintf(&msg, "RegisterPlugin error -- plugin registration failed with err: %s",
                     error ? error : strerror(-r)) < 0)
                msg = NULL;
        notify(a, false, msg ? msg : "RegisterPlugin error -- plugin registration failed");
}

static void on_info(const struct grpc_reply *reply, void *userdata) {
        struct attempt *a = userdata;
        struct pluginmanager *pm = a->pm;
        const Pluginregistration__PluginInfo *info = (const void *) reply->msg;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *msg = NULL;
        struct plugin *p;
        int r;

        if (reply->r < 0) {
                log_error("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %s",
                          a->path, reply->message);
                attempt_end(a, true);
                return;
        }
        for (size_t i = 0; i < pm->n_handlers; i++)
                if (streq(pm->handlers[i].type, info->type))
                        a->handler = &pm->handlers[i];
        if (!a->handler) {
                if (asprintf(&msg, "RegisterPlugin error -- no handler registered for plugin type: %s at socket %s",
                             info->type, a->path) < 0)
                        msg = NULL;
                notify(a, false, msg);
                return;
        }
        a->name = strdup(info->name);
        a->endpoint = strdup(isempty(info->endpoint) ? a->path : info->endpoint);
        for (size_t i = 0; i < info->n_supported_versions; i++)
                if (strv_extend(&a->versions, info->supported_versions[i]) < 0)
                        a->name = mfree(a->name);
        if (!a->name || !a->endpoint) {
                attempt_end(a, true);
                return;
        }
        r = a->handler->validate(a->handler->userdata, a->name, a->endpoint, a->versions, &why);
        if (r < 0) {
                if (asprintf(&msg, "RegisterPlugin error -- plugin validation failed with err: %s",
                             ck_error_message(why)) < 0)
                        msg = NULL;
                notify(a, false, msg);
                return;
        }
        if (!a->sock) { /* the socket went away meanwhile */
                attempt_end(a, true);
                return;
        }
        /* ActualStateOfWorld.AddPlugin, before the handler registers it (as upstream) */
        p = plugin_find(pm, a->path);
        if (p)
                plugin_remove(pm, p);
        p = calloc(1, sizeof(*p));
        if (!p || !(p->path = strdup(a->path)) || !(p->name = strdup(a->name)) ||
            !(p->endpoint = strdup(a->endpoint))) {
                if (p) {
                        free(p->path);
                        free(p->name);
                        free(p);
                }
                attempt_end(a, true);
                return;
        }
        p->generation = a->generation;
        p->handler = a->handler;
        DLIST_PREPEND(pm->plugins, p);
        a->registering = true;
        r = a->handler->register_plugin(a->handler->userdata, a->name, a->endpoint, a->versions, on_registered, a);
        if (r < 0) {
                a->registering = false;
                if (asprintf(&msg, "RegisterPlugin error -- plugin registration failed with err: %s", strerror(-r)) < 0)
                        msg = NULL;
                notify(a, false, msg);
        }
}

static void attempt_start(struct pluginmanager *pm, struct socket_entry *s) {
        Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
        _cleanup_free_ char *ep = NULL;
        struct attempt *a = calloc(1, sizeof(*a));

        if (!a)
                return;
        a->pm = pm;
        a->sock = s;
        a->generation = s->generation;
        a->path = strdup(s->path);
        if (!a->path || asprintf(&ep, "unix://%s", s->path) < 0 ||
            grpc_client_new(pm->base, ep, GET_INFO_TIMEOUT_USEC, &a->grpc) < 0) {
                attempt_free(a);
                return;
        }
        s->attempt = a;
        DLIST_PREPEND(pm->attempts, a);
        log_v(2, "RegisterPlugin started for socket %s", s->path);
        if (grpc_call(a->grpc, "/pluginregistration.Registration/GetInfo", &req.base,
                      &pluginregistration__plugin_info__descriptor, GET_INFO_TIMEOUT_USEC, on_info, a, NULL) < 0)
                attempt_end(a, true);
}

/* ---------------------------------------------------------------- reconciler */

static struct socket_entry *socket_find(struct pluginmanager *pm, const char *path) {
        for (struct socket_entry *s = pm->sockets; s; s = s->next)
                if (streq(s->path, path))
                        return s;
        return NULL;
}

static void reconcile(struct pluginmanager *pm) {
        uint64_t now = now_usec();

        /* unregister the plugins whose socket is gone or was made anew */
        for (struct plugin *p = pm->plugins, *next; p; p = next) {
                struct socket_entry *s = socket_find(pm, p->path);
                next = p->next;
                if (s && s->generation == p->generation)
                        continue;
                log_info("plugin %s at %s went away: deregistering it", p->name, p->path);
                if (p->handler->deregister_endpoint)
                        p->handler->deregister_endpoint(p->handler->userdata, p->name, p->endpoint);
                else
                        p->handler->deregister(p->handler->userdata, p->name);
                plugin_remove(pm, p);
        }
        /* register the new ones */
        for (struct socket_entry *s = pm->sockets; s; s = s->next) {
                struct plugin *p = plugin_find(pm, s->path);
                if (s->attempt || (p && p->generation == s->generation) || now < s->retry_at)
                        continue;
                attempt_start(pm, s);
        }
}

static void on_kick(evutil_socket_t fd, short what, void *userdata) {
        reconcile(userdata);
}

static void on_tick(evutil_socket_t fd, short what, void *userdata) {
        struct pluginmanager *pm = userdata;
        evtimer_add_usec(pm->ev_tick, RECONCILE_PERIOD_USEC);
        reconcile(pm);
}

static void kick(struct pluginmanager *pm) {
        event_active(pm->ev_kick, EV_TIMEOUT, 0);
}

/* ---------------------------------------------------------------- desired state (the watcher) */

static void socket_add(struct pluginmanager *pm, const char *path) {
        struct socket_entry *s = socket_find(pm, path);

        log_v(2, "Adding socket path or updating timestamp %s to desired state cache", path);
        if (!s) {
                if (pm->n_sockets >= MAX_SOCKETS) {
                        log_warning("plugins_registry: more than %d sockets, %s ignored", MAX_SOCKETS, path);
                        return;
                }
                s = calloc(1, sizeof(*s));
                if (!s || !(s->path = strdup(path))) {
                        free(s);
                        return;
                }
                DLIST_PREPEND(pm->sockets, s);
                pm->n_sockets++;
        }
        s->generation = ++pm->next_generation;
        s->retry_at = 0;
        s->delay = 0;
        if (s->attempt) {
                s->attempt->sock = NULL; /* it asked the old socket */
                s->attempt = NULL;
        }
        kick(pm);
}

static void socket_remove(struct pluginmanager *pm, const char *path) {
        struct socket_entry *s;

        DLIST_FOREACH(s, pm->sockets) {
                if (!streq(s->path, path))
                        continue;
                log_v(2, "Removing socket path %s from desired state cache", path);
                DLIST_REMOVE(pm->sockets, s);
                pm->n_sockets--;
                if (s->attempt)
                        s->attempt->sock = NULL;
                free(s->path);
                free(s);
                kick(pm);
                return;
        }
}

/* every socket at or below dir leaves the desired state (the directory went away) */
static void socket_remove_below(struct pluginmanager *pm, const char *dir) {
        size_t l = strlen(dir);
        for (struct socket_entry *s = pm->sockets, *next; s; s = next) {
                next = s->next;
                if (strncmp(s->path, dir, l) == 0 && s->path[l] == '/')
                        socket_remove(pm, s->path);
        }
}

static int watch_add(struct pluginmanager *pm, const char *path) {
        struct watch *n;
        int wd;

        wd = inotify_add_watch(pm->ifd, path,
                               IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF | IN_ONLYDIR);
        if (wd < 0) {
                /* the watcher goes on without this directory (traverse skips it): said here, once, as upstream */
                int r = -errno;
                log_error("failed to watch %s, err: %s", path, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < pm->n_watches; i++)
                if (pm->watches[i].wd == wd)
                        return 0;
        n = realloc(pm->watches, (pm->n_watches + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        pm->watches = n;
        n[pm->n_watches].wd = wd;
        n[pm->n_watches].path = strdup(path);
        if (!n[pm->n_watches].path)
                return -ENOMEM;
        pm->n_watches++;
        return 0;
}

static void handle_create(struct pluginmanager *pm, const char *path, unsigned depth);

/* traversePluginDir */
static void traverse(struct pluginmanager *pm, const char *dir, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        if (depth > MAX_DEPTH || watch_add(pm, dir) < 0)
                return;
        d = opendir(dir);
        if (!d) {
                log_error("failed to traverse plugin socket path %s, err: %m", dir);
                return;
        }
        while ((e = readdir(d))) {
                _cleanup_free_ char *p = NULL;
                if (streq(e->d_name, ".") || streq(e->d_name, "..") || asprintf(&p, "%s/%s", dir, e->d_name) < 0)
                        continue;
                handle_create(pm, p, depth + 1);
        }
}

static void handle_create(struct pluginmanager *pm, const char *path, unsigned depth) {
        const char *base = strrchr(path, '/');
        struct stat st;

        base = base ? base + 1 : path;
        if (base[0] == '.') {
                log_v(5, "Ignoring file (starts with '.'): %s", base);
                return;
        }
        if (lstat(path, &st) < 0)
                return;
        if (S_ISDIR(st.st_mode))
                traverse(pm, path, depth);
        else if (S_ISSOCK(st.st_mode))
                socket_add(pm, path);
        else
                log_v(5, "Ignoring non socket file %s", base);
}

static const char *watch_path(struct pluginmanager *pm, int wd) {
        for (size_t i = 0; i < pm->n_watches; i++)
                if (pm->watches[i].wd == wd)
                        return pm->watches[i].path;
        return NULL;
}

static void watch_forget(struct pluginmanager *pm, int wd) {
        for (size_t i = 0; i < pm->n_watches; i++)
                if (pm->watches[i].wd == wd) {
                        free(pm->watches[i].path);
                        pm->watches[i] = pm->watches[--pm->n_watches];
                        return;
                }
}

static void on_inotify(evutil_socket_t fd, short what, void *userdata) {
        struct pluginmanager *pm = userdata;
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t n = read(pm->ifd, buf, sizeof(buf));
                if (n <= 0)
                        return;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const void *) p;
                        const char *dir = watch_path(pm, e->wd);
                        _cleanup_free_ char *path = NULL;

                        p += sizeof(*e) + e->len;
                        if (e->mask & IN_Q_OVERFLOW) {
                                log_warning("plugins_registry: inotify queue overflow, rescanning %s", pm->dir);
                                traverse(pm, pm->dir, 0);
                                continue;
                        }
                        if (!dir)
                                continue;
                        if (e->mask & (IN_DELETE_SELF | IN_IGNORED)) {
                                socket_remove_below(pm, dir);
                                watch_forget(pm, e->wd);
                                continue;
                        }
                        if (e->len == 0 || asprintf(&path, "%s/%s", dir, e->name) < 0)
                                continue;
                        if (e->mask & (IN_CREATE | IN_MOVED_TO))
                                handle_create(pm, path, 1);
                        else if (e->mask & (IN_DELETE | IN_MOVED_FROM)) {
                                socket_remove(pm, path);
                                socket_remove_below(pm, path);
                        }
                }
        }
}

/* ---------------------------------------------------------------- lifecycle */

int pluginmanager_new(struct event_base *base, const char *dir, struct pluginmanager **ret) {
        struct pluginmanager *pm = calloc(1, sizeof(*pm));

        if (!pm)
                return -ENOMEM;
        pm->base = base;
        pm->ifd = -EBADF;
        pm->dir = strdup(dir);
        pm->ev_tick = evtimer_new(base, on_tick, pm);
        pm->ev_kick = event_new(base, -1, 0, on_kick, pm);
        pm->ev_reap = event_new(base, -1, 0, reap, pm);
        if (!pm->dir || !pm->ev_tick || !pm->ev_kick || !pm->ev_reap) {
                pluginmanager_free(pm);
                return -ENOMEM;
        }
        *ret = pm;
        return 0;
}

struct pluginmanager *pluginmanager_free(struct pluginmanager *pm) {
        if (!pm)
                return NULL;
        while (pm->sockets) {
                struct socket_entry *s = pm->sockets;
                DLIST_REMOVE(pm->sockets, s);
                if (s->attempt)
                        s->attempt->sock = NULL;
                free(s->path);
                free(s);
        }
        /* attempts in flight: a gRPC call ends now (Cancelled) and moves it to the zombies; one waiting for its
         * handler is dropped (the handlers' owners are freed first and never call back) */
        while (pm->attempts) {
                struct attempt *a = pm->attempts;
                if (!a->registering && a->grpc) {
                        a->grpc = grpc_client_free(a->grpc);
                        if (pm->attempts == a) /* no call was in flight */
                                attempt_end(a, true);
                } else
                        attempt_end(a, true);
        }
        reap(-1, 0, pm);
        while (pm->plugins)
                plugin_remove(pm, pm->plugins);
        for (size_t i = 0; i < pm->n_watches; i++)
                free(pm->watches[i].path);
        free(pm->watches);
        if (pm->ev_inotify)
                event_free(pm->ev_inotify);
        if (pm->ev_tick)
                event_free(pm->ev_tick);
        if (pm->ev_kick)
                event_free(pm->ev_kick);
        if (pm->ev_reap)
                event_free(pm->ev_reap);
        if (pm->ifd >= 0)
                close(pm->ifd);
        free(pm->dir);
        free(pm);
        return NULL;
}

int pluginmanager_add_handler(struct pluginmanager *pm, const struct pluginmanager_handler *h) {
        if (pm->n_handlers >= MAX_HANDLERS)
                return -E2BIG;
        pm->handlers[pm->n_handlers++] = *h;
        return 0;
}

int pluginmanager_start(struct pluginmanager *pm, struct ck_error **ret_error) {
        int r;

        log_v(2, "Plugin Watcher Start at %s", pm->dir);
        r = mkdir_p(pm->dir, 0755);
        if (r < 0)
                return ck_error_set(ret_error, r, "error (re-)creating root %s: %s", pm->dir, strerror(-r));
        pm->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (pm->ifd < 0)
                return ck_error_set(ret_error, -errno, "failed to start plugin fsWatcher, err: %m");
        pm->ev_inotify = event_new(pm->base, pm->ifd, EV_READ | EV_PERSIST, on_inotify, pm);
        if (!pm->ev_inotify || event_add(pm->ev_inotify, NULL) < 0)
                return -ENOMEM;
        traverse(pm, pm->dir, 0);
        evtimer_add_usec(pm->ev_tick, RECONCILE_PERIOD_USEC);
        return 0;
}
