/* SPDX-License-Identifier: Apache-2.0 */
/* /containerLogs/{ns}/{pod}/{container} (the CRI log of a container, decoded; follow streams) and /logs/
 * (files under /var/log). */
#include <errno.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#include "basic/error.h"
#include "basic/evbuffer.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/spawn.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "logs/logs.h"
#include "server/logs_query.h"
#include "server/logs_dir.h"
#include "server/node_log_query.h"
#include "server/server-internal.h"

#define LOGS_ROOT "/var/log"
#define LOGS_FILE_MAX_CHUNK (256 * 1024)
/* A log answer is read from the file only while less than this waits to be sent to the client: whatever the
 * log's size, a request holds about a read step, this, and its connection's buffers. */
#define LOGS_MAX_UNSENT (256 * 1024)

/* /containerLogs: every answer, follow or not, is read by a logs follower a step at a time from the loop and sent
 * chunked as the client takes it (back-pressure); the terminating chunk is written once the data is, as
 * upstream's flushing writer does. */
struct log_stream {
        struct api_stream stream;
        struct evhttp_request *req;
        struct logs_follower *follower;
        char *ns, *pod, *container, *container_id;
        bool follow;    /* follow=true and the container runs: still_running asks the kubelet */
        bool started;   /* the reply's status line and headers are out */
        bool unflushed; /* a chunk is queued and not yet written */
        bool ending;    /* the read ended: the reply ends once the queued chunks are written */
};

/* a log answer with nothing in it */
static void reply_empty(struct evhttp_request *req) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();

        if (!b) {
                api_reply_text(req, 500, "Internal Error: out of memory\n");
                return;
        }
        api_reply_flushed(req, "text/plain", b);
}

static void log_stream_free(struct log_stream *ls) {
        if (!ls)
                return;
        api_stream_unregister(&ls->stream);
        logs_follower_free(ls->follower);
        free(ls->ns);
        free(ls->pod);
        free(ls->container);
        free(ls->container_id);
        free(ls);
}

/* end the chunked reply (or free a request whose client left) and the stream */
static void log_stream_end(struct log_stream *ls) {
        struct evhttp_request *req = ls->req;
        struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;

        if (evcon)
                evhttp_connection_set_closecb(evcon, NULL, NULL);
        ls->req = NULL;
        if (req) {
                if (ls->started)
                        evhttp_send_reply_end(req);
                else
                        reply_empty(req);
        }
        log_stream_free(ls);
}

static void log_stream_cancel(struct api_stream *st) {
        log_stream_end((struct log_stream *) st);
}

static void on_client_closed(struct evhttp_connection *evcon, void *userdata) {
        struct log_stream *ls = userdata;
        log_v(3, "containerLogs %s/%s/%s: the client left", ls->ns, ls->pod, ls->container);
        evhttp_connection_set_closecb(evcon, NULL, NULL);
        /* a request still on the connection is freed with it; one that evhttp took off it (the client left while
         * the answer was being written: evhttp_connection_incoming_fail) is ours to free */
        if (ls->req && evhttp_request_get_connection(ls->req) != evcon)
                evhttp_request_free(ls->req);
        ls->req = NULL;
        log_stream_end(ls);
}

/* everything queued was written to the client: read on, or end */
static void on_flushed(struct evhttp_connection *evcon, void *userdata) {
        struct log_stream *ls = userdata;

        ls->unflushed = false;
        if (ls->ending) {
                log_stream_end(ls);
                return;
        }
        logs_follower_resume(ls->follower);
}

static void start_reply(struct log_stream *ls) {
        struct evhttp_connection *evcon = evhttp_request_get_connection(ls->req);
        struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
        struct timeval wt = { .tv_sec = API_REQUEST_TIMEOUT_SEC };

        /* a follow may be quiet for hours: no read timeout; a client that stops reading still times out */
        if (bev)
                bufferevent_set_timeouts(bev, NULL, &wt);
        evhttp_add_header(evhttp_request_get_output_headers(ls->req), "Content-Type", "text/plain");
        evhttp_add_header(evhttp_request_get_output_headers(ls->req), "X-Content-Type-Options", "nosniff");
        evhttp_add_header(evhttp_request_get_output_headers(ls->req), "Cache-Control", "no-cache, private");
        evhttp_send_reply_start(ls->req, 200, "OK");
        ls->started = true;
}

static int on_log_write(const void *data, size_t len, void *userdata) {
        struct log_stream *ls = userdata;
        struct evhttp_connection *evcon = ls->req ? evhttp_request_get_connection(ls->req) : NULL;
        _cleanup_evbuffer_ struct evbuffer *b = NULL;

        if (!evcon)
                return -ECONNRESET;
        if (api_connection_unsent(evcon) > LOGS_MAX_UNSENT)
                return -EAGAIN; /* resumed by on_flushed */
        b = evbuffer_new();
        if (!b || evbuffer_add(b, data, len) < 0)
                return -ENOMEM;
        if (!ls->started)
                start_reply(ls);
        ls->unflushed = true;
        evhttp_send_reply_chunk_with_cb(ls->req, b, on_flushed, ls);
        return 0;
}

static bool on_log_running(void *userdata) {
        struct log_stream *ls = userdata;
        _cleanup_(kc_container_freep) struct kc_container *c = NULL;

        if (!ls->follow || !ls->stream.s)
                return false; /* not following: the file as it is now */
        if (api_host_lookup_container(ls->stream.s, ls->ns, ls->pod, ls->container, false, &c, NULL) < 0)
                return false;
        return streq(c->id, ls->container_id) && c->state == KC_CONTAINER_RUNNING;
}

static void on_log_done(int r, void *userdata) {
        struct log_stream *ls = userdata;

        if (r < 0 && r != -ECONNRESET)
                log_v(2, "containerLogs %s/%s/%s: reading the log ended: %s", ls->ns, ls->pod, ls->container,
                      strerror(-r));
        ls->follower = logs_follower_free(ls->follower);
        if (r < 0 && r != -ECONNRESET && !ls->started && ls->req) {
                struct evhttp_request *req = TAKE_PTR(ls->req);
                struct evhttp_connection *evcon = evhttp_request_get_connection(req);
                if (evcon)
                        evhttp_connection_set_closecb(evcon, NULL, NULL);
                api_reply_text(req, 500, "Internal Error: failed to read the log file: %s\n", strerror(-r));
                log_stream_free(ls);
                return;
        }
        if (ls->unflushed && ls->req) {
                ls->ending = true; /* the terminating chunk in a TLS record of its own, once the data is out */
                return;
        }
        log_stream_end(ls);
}

void api_handle_container_logs(struct api_request *r, const char *rest) {
        _cleanup_strv_free_ char **parts = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_(kc_container_freep) struct kc_container *c = NULL;
        _cleanup_close_ int fd = -1;
        struct logs_options o;
        const char *ns, *pod, *container;
        struct log_stream *ls;
        struct evhttp_connection *evcon;
        int k;

        k = api_path_components(rest, &parts);
        if (k < 0 || strv_length(parts) != 3) {
                api_reply_text(r->req, 400,
                               "{\"message\": \"invalid path: want "
                               "/containerLogs/{podNamespace}/{podID}/{containerName}\"}");
                return;
        }
        ns = parts[0];
        pod = parts[1];
        container = parts[2];
        k = api_log_options_from_query(r->query, &o, &why);
        if (k == -ENOMEM) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        if (k < 0) {
                /* upstream answers "Unable to decode query." / "Invalid request."; we say which parameter */
                api_reply_text(r->req, 400, "{\"message\": \"%s: %s\"}",
                               k == -EBADMSG ? "Unable to decode query" : "Invalid request", ck_error_message(why));
                return;
        }
        k = api_host_lookup_container(r->s, ns, pod, container, o.previous, &c, NULL);
        if (k == -ENXIO) {
                api_reply_text(r->req, 404, "pod \"%s\" does not exist\n", pod);
                return;
        }
        if (k == -ENOENT) {
                api_reply_text(r->req, 404, "container \"%s\" not found in pod \"%s\"\n", container, pod);
                return;
        }
        if (k == -ESRCH) {
                if (o.previous)
                        api_reply_text(r->req, 400, "previous terminated container \"%s\" in pod \"%s\" not found\n",
                                       container, pod);
                else
                        api_reply_text(r->req, 400,
                                       "container \"%s\" in pod \"%s\" is waiting to start: "
                                       "ContainerCreating\n",
                                       container, pod);
                return;
        }
        if (k < 0) {
                api_reply_text(r->req, 500, "Internal Error: %s\n", strerror(-k));
                return;
        }
        if (isempty(c->log_path)) {
                api_reply_text(r->req, 400, "container \"%s\" in pod \"%s\" has no log file\n", container, pod);
                return;
        }
        fd = open(c->log_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd >= 0 && fd_verify_regular(fd) < 0) {
                api_reply_text(r->req, 500, "Internal Error: log file %s is not a regular file\n", c->log_path);
                return;
        }
        if (fd < 0) {
                if (errno == ENOENT) {
                        /* the runtime has not written anything yet */
                        reply_empty(r->req);
                        return;
                }
                api_reply_text(r->req, 500, "Internal Error: failed to open log file %s: %m\n", c->log_path);
                return;
        }
        if (r->method == EVHTTP_REQ_HEAD) {
                reply_empty(r->req);
                return;
        }

        ls = calloc(1, sizeof(*ls));
        if (!ls || !(ls->ns = strdup(ns)) || !(ls->pod = strdup(pod)) || !(ls->container = strdup(container)) ||
            !(ls->container_id = strdup(c->id))) {
                log_stream_free(ls);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        /* a container that is not running (or its previous instance) has all its log already */
        ls->follow = o.follow && !o.previous && c->state == KC_CONTAINER_RUNNING;
        o.follow = ls->follow;
        ls->stream.cancel = log_stream_cancel;
        if (api_stream_register(r->s, &ls->stream) < 0) {
                log_stream_free(ls);
                api_reply_text(r->req, 503, "Service Unavailable: too many streams\n");
                return;
        }
        k = logs_follow(r->s->base, c->log_path, &o, NULL, on_log_write, on_log_running, on_log_done, ls,
                        &ls->follower);
        if (k < 0) {
                log_stream_free(ls);
                api_reply_text(r->req, 500, "Internal Error: cannot read %s: %s\n", c->log_path, strerror(-k));
                return;
        }
        ls->req = r->req;
        evcon = evhttp_request_get_connection(r->req);
        if (evcon)
                evhttp_connection_set_closecb(evcon, on_client_closed, ls);
}

/* ---------------------------------------------------------------- /logs/ */

static void close_fd(int fd) {
        if (fd >= 0)
                close(fd);
}

/* A file sent in chunks as the client takes them, so a large file never sits in memory. */
struct file_stream {
        struct api_stream stream;
        struct evhttp_request *req;
        int fd;
        uint64_t offset, size;
};

static void file_stream_end(struct file_stream *fs) {
        struct evhttp_request *req = fs->req;
        struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;

        if (evcon)
                evhttp_connection_set_closecb(evcon, NULL, NULL);
        fs->req = NULL;
        if (req)
                evhttp_send_reply_end(req);
        api_stream_unregister(&fs->stream);
        close_fd(fs->fd);
        free(fs);
}

static void file_stream_cancel(struct api_stream *st) {
        file_stream_end((struct file_stream *) st);
}

static void file_stream_closed(struct evhttp_connection *evcon, void *userdata) {
        evhttp_connection_set_closecb(evcon, NULL, NULL);
        file_stream_end(userdata);
}

static void file_stream_next(struct evhttp_connection *evcon, void *userdata) {
        struct file_stream *fs = userdata;
        _cleanup_evbuffer_ struct evbuffer *b = NULL;
        char buf[LOGS_FILE_MAX_CHUNK];
        ssize_t n;

        /* the file is sent as it was when the request came: a growing log does not keep the stream open */
        if (fs->offset >= fs->size || !fs->req || !evhttp_request_get_connection(fs->req)) {
                file_stream_end(fs);
                return;
        }
        n = pread(fs->fd, buf, (size_t) MIN((uint64_t) sizeof(buf), fs->size - fs->offset), (off_t) fs->offset);
        if (n <= 0) {
                file_stream_end(fs);
                return;
        }
        fs->offset += (uint64_t) n;
        b = evbuffer_new();
        if (!b) {
                file_stream_end(fs);
                return;
        }
        evbuffer_add(b, buf, (size_t) n);
        evhttp_send_reply_chunk_with_cb(fs->req, b, file_stream_next, fs);
}

static void file_stream_start(struct api_request *r, int fd, uint64_t size, const char *content_type) {
        struct file_stream *fs = calloc(1, sizeof(*fs));
        struct evhttp_connection *evcon = evhttp_request_get_connection(r->req);

        if (!fs) {
                close_fd(fd);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        fs->fd = fd;
        fs->size = size;
        fs->stream.cancel = file_stream_cancel;
        if (api_stream_register(r->s, &fs->stream) < 0) {
                close_fd(fd);
                free(fs);
                api_reply_text(r->req, 503, "Service Unavailable: too many streams\n");
                return;
        }
        fs->req = r->req;
        if (evcon)
                evhttp_connection_set_closecb(evcon, file_stream_closed, fs);
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type", content_type);
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "X-Content-Type-Options", "nosniff");
        evhttp_send_reply_start(r->req, 200, "OK");
        if (r->method == EVHTTP_REQ_HEAD) {
                file_stream_end(fs);
                return;
        }
        file_stream_next(evcon, fs);
}

/* the node log query, else api_handle_logs_dir */
static void api_handle_logs_dir(struct api_request *r, const char *rest) {
        _cleanup_close_ int fd = -1;
        bool is_dir = false;
        _cleanup_evbuffer_ struct evbuffer *out = NULL;
        struct stat st;
        int k;

        k = api_logs_dir_open(LOGS_ROOT, rest, &fd, &is_dir);
        if (k == -ENOENT || k == -ENOTDIR) {
                api_reply_text(r->req, 404, "404 page not found\n");
                return;
        }
        if (k == -EACCES || k == -EPERM || k == -EXDEV || k == -ELOOP || k == -EINVAL) {
                api_reply_text(r->req, 403, "403 Forbidden\n");
                return;
        }
        if (k < 0) {
                api_reply_text(r->req, 500, "500 Internal Server Error: %s\n", strerror(-k));
                return;
        }
        out = evbuffer_new();
        if (!out) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        if (is_dir) {
                if (!isempty(rest) && !endswith(rest, "/")) {
                        /* as http.FileServer: directories are served with a trailing slash */
                        _cleanup_free_ char *loc = NULL;
                        if (asprintf(&loc, "/logs/%s/", rest) < 0) {
                                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                                return;
                        }
                        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Location", loc);
                        api_reply_text(r->req, 301, "Moved Permanently\n");
                        return;
                }
                k = api_logs_dir_list_html(TAKE_FD(fd), rest, out);
                if (k < 0) {
                        api_reply_text(r->req, 500, "Internal Error: cannot list the directory: %s\n", strerror(-k));
                        return;
                }
                api_reply_buffer(r->req, 200, "text/html; charset=utf-8", out);
                return;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                api_reply_text(r->req, 403, "403 Forbidden\n");
                return;
        }
        {
                const char *type = api_logs_dir_content_type_fd(fd, rest); /* sniffed: binary logs are not text */
                file_stream_start(r, TAKE_FD(fd), (uint64_t) st.st_size, type);
        }
}

/* The journal half of the node log query (upstream's nodeLogQuery.Copy on Linux): which services log to journald
 * (`journalctl --field _SYSTEMD_UNIT`), then journalctl for those, each a child process watched by the loop
 * (spawn), 30 s for both runs as upstream's deadline; its stdout then stderr (upstream merges them) sent once it
 * ended, at most JOURNAL_OUT_MAX bytes. The services that do not log to journald are looked for as files under
 * /var/log with upstream's heuristics. */
#define JOURNAL_TIMEOUT_USEC (30 * USEC_PER_SEC)
#define JOURNAL_OUT_MAX (32 * 1024 * 1024)
#define JOURNAL_ERR_MAX (1024 * 1024)
#define JOURNAL_FIELD_MAX (4 * 1024 * 1024)

struct journal_query {
        struct api_stream stream;
        struct api_server *s;
        struct evhttp_request *req;
        struct node_log_query *q;
        struct spawn *child;
        char *journalctl; /* its path, NULL when not found */
        uint64_t deadline;
        struct evbuffer *out;
        char **native, **file;
};

static void journal_query_free(struct journal_query *j) {
        if (!j)
                return;
        api_stream_unregister(&j->stream);
        spawn_cancel(j->child);
        node_log_query_free(j->q);
        free(j->journalctl);
        if (j->out)
                evbuffer_free(j->out);
        strv_free(j->native);
        strv_free(j->file);
        free(j);
}

/* detach from the connection; the request, when there is one, is answered by the caller */
static struct evhttp_request *journal_query_detach(struct journal_query *j) {
        struct evhttp_request *req = TAKE_PTR(j->req);
        struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;

        if (evcon)
                evhttp_connection_set_closecb(evcon, NULL, NULL);
        return req;
}

static void journal_query_cancel(struct api_stream *st) {
        struct journal_query *j = (struct journal_query *) st;
        struct evhttp_request *req = journal_query_detach(j);

        if (req)
                api_reply_text(req, 503, "Service Unavailable: the server is stopping\n");
        journal_query_free(j);
}

static void journal_client_closed(struct evhttp_connection *evcon, void *userdata) {
        struct journal_query *j = userdata;

        evhttp_connection_set_closecb(evcon, NULL, NULL);
        log_v(3, "node log query: the client left");
        /* as on_client_closed: a request evhttp took off the connection is ours to free */
        if (j->req && evhttp_request_get_connection(j->req) != evcon)
                evhttp_request_free(j->req);
        j->req = NULL;
        journal_query_free(j);
}

/* exec.LookPath("journalctl") */
static char *find_journalctl(void) {
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = strdup(
                isempty(path) ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" : path);
        char *save = NULL;

        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                if (asprintf(&p, "%s/journalctl", d) < 0)
                        continue;
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

static uint64_t journal_remaining(const struct journal_query *j) {
        uint64_t now = now_usec();
        return now >= j->deadline ? 1 : j->deadline - now;
}

/* the services logging to files, and the answer */
static void journal_finish(struct journal_query *j) {
        struct evhttp_request *req;
        size_t n_file = strv_length(j->file);

        if (n_file > 0 && node_log_query_has_options(j->q)) {
                _cleanup_free_ char *l = strv_join(j->file, " ");
                evbuffer_add_printf(j->out,
                                    "\noptions present and query resolved to log files for [%s]\ntry without "
                                    "specifying options\n",
                                    strempty(l));
                n_file = 0;
        }
        for (size_t i = 0; i < n_file; i++) {
                _cleanup_strv_free_ char **names = NULL;
                _cleanup_close_ int fd = -1;
                bool is_dir = false;
                int k = node_log_query_heuristic_files(j->file[i], &names);

                for (size_t n = 0; names && names[n]; n++) {
                        close_fd(fd);
                        fd = -1;
                        k = api_logs_dir_open(LOGS_ROOT, names[n], &fd, &is_dir);
                        if (k >= 0 && is_dir)
                                k = -ENOENT; /* /var/log/<service>/ holds <service>.log */
                        if (k != -ENOENT && k != -ENOTDIR)
                                break;
                }
                if (k == -ENOENT || k == -ENOTDIR)
                        evbuffer_add_printf(j->out, "\nlog not found for %s\n", j->file[i]);
                else if (k < 0)
                        evbuffer_add_printf(j->out, "\nerror getting log for %s: %s\n", j->file[i], strerror(-k));
                else if (n_file == 1 && evbuffer_get_length(j->out) == 0) {
                        /* the query's one answer: the file, sent as the client takes it */
                        struct stat st;
                        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                                evbuffer_add_printf(j->out, "\nerror getting log for %s: not a regular file\n",
                                                    j->file[i]);
                                break;
                        }
                        req = journal_query_detach(j);
                        if (req) {
                                struct api_request r = { .s = j->s, .req = req, .method = EVHTTP_REQ_GET };
                                file_stream_start(&r, TAKE_FD(fd), (uint64_t) st.st_size, "text/plain;charset=UTF-8");
                        }
                        journal_query_free(j);
                        return;
                } else
                        /* a file is streamed, never held in memory: one per query */
                        evbuffer_add_printf(j->out,
                                            "\nerror getting log for %s: ckubelet sends a service's log file only "
                                            "when it is the query's one service\n",
                                            j->file[i]);
        }
        req = journal_query_detach(j);
        if (req)
                api_reply_flushed(req, "text/plain;charset=UTF-8", j->out);
        journal_query_free(j);
}

static void journal_logs_done(const struct spawn_result *res, void *userdata) {
        struct journal_query *j = userdata;

        j->child = NULL;
        evbuffer_add(j->out, res->out, res->out_len);
        evbuffer_add(j->out, res->err, res->err_len);
        if (res->output_capped)
                evbuffer_add_printf(j->out, "\nerror: journal output cut at %d bytes\n", JOURNAL_OUT_MAX);
        /* journalctl's own failures (exit status, killed at the deadline) leave its output as it is */
        journal_finish(j);
}

static void journal_logs_start(struct journal_query *j) {
        _cleanup_strv_free_ char **argv = NULL;
        int k;

        k = node_log_query_journal_argv(j->q, j->native, &argv);
        if (k < 0) {
                evbuffer_add_printf(j->out, "\nfailed to get logging cmd: %s\n", strerror(-k));
                journal_finish(j);
                return;
        }
        k = j->journalctl ? spawn_start(j->s->base, j->journalctl, argv, environ, NULL, 0, JOURNAL_OUT_MAX,
                                        JOURNAL_ERR_MAX, journal_remaining(j), journal_logs_done, j, &j->child)
                          : -ENOENT;
        if (k < 0) {
                log_v(2, "node log query: cannot run journalctl: %s", strerror(-k));
                if (!j->q->has_boot || j->q->boot == 0)
                        evbuffer_add_printf(j->out, "\nerror: journal output not available\n");
                journal_finish(j);
        }
}

static void journal_field_done(const struct spawn_result *res, void *userdata) {
        struct journal_query *j = userdata;
        /* CombinedOutput: an error (exit status, signal, our cap) makes every service a file logger */
        bool ok = res->exit_code == 0 && !res->timed_out && !res->output_capped;
        _cleanup_free_ char *combined = NULL;

        j->child = NULL;
        if (ok && asprintf(&combined, "%.*s%.*s", (int) res->out_len, res->out, (int) res->err_len, res->err) < 0)
                ok = false;
        for (size_t i = 0; j->q->services[i]; i++) {
                bool native = ok && node_log_query_is_native_logger(combined, j->q->services[i]);
                if (strv_extend(native ? &j->native : &j->file, j->q->services[i]) < 0) {
                        struct evhttp_request *req = journal_query_detach(j);
                        if (req)
                                api_reply_text(req, 500, "Internal Error: out of memory\n");
                        journal_query_free(j);
                        return;
                }
        }
        if (j->native && now_usec() < j->deadline)
                journal_logs_start(j);
        else
                journal_finish(j);
}

static void journal_query_start(struct api_request *r, struct node_log_query **q) {
        struct evhttp_connection *evcon = evhttp_request_get_connection(r->req);
        char *const field_argv[] = { (char *) "journalctl", (char *) "--field", (char *) "_SYSTEMD_UNIT", NULL };
        struct spawn_result none = { .exit_code = -1 };
        struct journal_query *j = calloc(1, sizeof(*j));
        int k;

        if (!j || !(j->out = evbuffer_new())) {
                free(j);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        j->s = r->s;
        j->q = TAKE_PTR(*q);
        j->stream.kind = API_STREAM_SHORT;
        j->stream.cancel = journal_query_cancel;
        if (api_stream_register(r->s, &j->stream) < 0) {
                j->stream.s = NULL;
                journal_query_free(j);
                api_reply_text(r->req, 503, "Service Unavailable: too many streams\n");
                return;
        }
        j->req = r->req;
        if (evcon)
                evhttp_connection_set_closecb(evcon, journal_client_closed, j);
        j->deadline = now_usec() + JOURNAL_TIMEOUT_USEC;
        j->journalctl = find_journalctl();
        k = j->journalctl ? spawn_start(r->s->base, j->journalctl, field_argv, environ, NULL, 0, JOURNAL_FIELD_MAX,
                                        JOURNAL_ERR_MAX, JOURNAL_TIMEOUT_USEC, journal_field_done, j, &j->child)
                          : -ENOENT;
        if (k < 0)
                journal_field_done(&none, j); /* upstream: no journalctl, no native logger */
}

/* /logs/ with enableSystemLogQuery: the node log query (upstream's logServer in query mode) */
void api_handle_logs(struct api_request *r, const char *rest) {
        _cleanup_(node_log_query_freep) struct node_log_query *q = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_close_ int dirfd = -1;
        const char *file;
        int k;

        if (!r->s->o->enable_system_log_query) {
                api_handle_logs_dir(r, rest);
                return;
        }
        k = node_log_query_parse(r->query, &q, &err);
        if (k == -EINVAL) {
                api_reply_text(r->req, 400, "%s\n", ck_error_message(err));
                return;
        }
        if (k < 0) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        if (!q) {
                api_handle_logs_dir(r, rest);
                return;
        }
        if (!isempty(rest)) {
                api_reply_text(r->req, 406, "path not allowed in query mode\n");
                return;
        }
        dirfd = open(LOGS_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                api_reply_text(r->req, 500, "Internal Error: cannot open %s: %s\n", LOGS_ROOT, strerror(errno));
                return;
        }
        k = node_log_query_validate(q, dirfd, &err);
        if (k == -EINVAL) {
                api_reply_text(r->req, 406, "%s\n", ck_error_message(err));
                return;
        }
        if (k < 0) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        if (q->services) {
                journal_query_start(r, &q);
                return;
        }
        /* one file, no options (validated): served as the file server serves it */
        file = q->files[0];
        while (*file == '/' || *file == '\\')
                file++;
        api_handle_logs_dir(r, file);
}
