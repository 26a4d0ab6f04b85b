/* SPDX-License-Identifier: Apache-2.0 */
/* The client CA bundle, reloaded when its file changes: see client_ca.h. */

#include "server/client_ca.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "server/server-internal.h"

int api_client_ca_parse(const char *pem, size_t size, X509_STORE **ret_store, STACK_OF(X509_NAME) * *ret_names,
                        struct ck_error **ret_error) {
        BIO *bio = NULL;
        X509_STORE *store = NULL;
        STACK_OF(X509_NAME) *names = NULL;
        X509 *x;
        size_t n = 0;
        int r = -ENOMEM;

        assert(pem || size == 0);
        assert(ret_store && ret_names);
        ERR_clear_error();
        bio = BIO_new_mem_buf(pem, (int) size);
        store = X509_STORE_new();
        names = sk_X509_NAME_new_null();
        if (!bio || !store || !names)
                goto out;
        while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
                X509_NAME *name = X509_NAME_dup(X509_get_subject_name(x));
                /* the same certificate twice is no error (X509_STORE_add_cert ignores a duplicate) */
                if (!name || X509_STORE_add_cert(store, x) != 1 || sk_X509_NAME_push(names, name) <= 0) {
                        X509_NAME_free(name);
                        X509_free(x);
                        goto out;
                }
                X509_free(x);
                n++;
        }
        /* the end of the data is PEM_R_NO_START_LINE; anything else is a broken block */
        {
                unsigned long e = ERR_peek_last_error();
                if (n == 0 || (e && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE))) {
                        char buf[256] = "";
                        if (n > 0)
                                ERR_error_string_n(e, buf, sizeof(buf));
                        r = ck_error_set(ret_error, -EINVAL, "%s",
                                         n == 0 ? "data does not contain any valid RSA or ECDSA certificates" : buf);
                        goto out;
                }
        }
        *ret_store = TAKE_PTR(store);
        *ret_names = TAKE_PTR(names);
        r = 0;
out:
        ERR_clear_error();
        BIO_free(bio);
        X509_STORE_free(store);
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return r;
}

static bool same_stat(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* read and install the bundle; 0 (also when the content is the one in use), or a negative errno with
 * *ret_error */
static int load(struct api_server *s, struct ck_error **ret_error) {
        const char *path = s->o->client_ca_file;
        _cleanup_free_ char *data = NULL;
        X509_STORE *store = NULL;
        STACK_OF(X509_NAME) *names = NULL;
        size_t size = 0;
        int r;

        r = read_full_file(path, API_CLIENT_CA_MAX, &data, &size);
        if (r < 0)
                return ck_error_set(ret_error, r, "%s", strerror(-r));
        if (s->client_ca_pem && s->client_ca_size == size && memcmp(s->client_ca_pem, data, size) == 0)
                return 0;
        r = api_client_ca_parse(data, size, &store, &names, ret_error);
        if (r < 0)
                return r;
        /* a session from before a reload is not resumed (its client certificate was verified against the old
         * bundle): the session id context changes with each bundle */
        if (s->client_ca_pem) {
                char sid[32];
                int n = snprintf(sid, sizeof(sid), "ckubelet-%u", ++s->client_ca_generation);
                if (SSL_CTX_set_session_id_context(s->ssl_ctx, (const unsigned char *) sid, (unsigned) n) != 1) {
                        X509_STORE_free(store);
                        sk_X509_NAME_pop_free(names, X509_NAME_free);
                        return ck_error_set(ret_error, -ENOMEM, "cannot set the session id context");
                }
        }
        /* the context takes its own reference; handshakes started from now on verify against the new store */
        SSL_CTX_set1_cert_store(s->ssl_ctx, store);
        X509_STORE_free(store);
        SSL_CTX_set_client_CA_list(s->ssl_ctx, names);
        free(s->client_ca_pem);
        s->client_ca_pem = TAKE_PTR(data);
        s->client_ca_size = size;
        return 0;
}

void api_client_ca_check(struct api_server *s) {
        _cleanup_(ck_error_freep) struct ck_error *err = NULL;
        struct stat st;
        int r;

        assert(s);
        if (stat(s->o->client_ca_file, &st) < 0) {
                r = -errno;
                /* said once while it stays missing */
                if (!s->client_ca_failed)
                        log_error("Failed to reload the client CA bundle %s, keeping the one in use: %s",
                                  s->o->client_ca_file, strerror(-r));
                s->client_ca_failed = true;
                s->client_ca_stat = (struct stat) {};
                return;
        }
        /* unchanged: nothing to do (a broken file was said already) */
        if (same_stat(&st, &s->client_ca_stat))
                return;
        s->client_ca_stat = st;
        r = load(s, &err);
        if (r < 0) {
                log_error("Failed to reload the client CA bundle %s, keeping the one in use: %s", s->o->client_ca_file,
                          ck_error_message(err));
                s->client_ca_failed = true;
                return;
        }
        if (s->client_ca_failed || s->client_ca_loaded)
                log_info("Loaded a new client CA bundle from %s", s->o->client_ca_file);
        s->client_ca_failed = false;
        s->client_ca_loaded = true;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct api_server *s = userdata;
        (void) fd;
        (void) what;

        api_client_ca_check(s);
        (void) evtimer_add_usec(s->client_ca_timer, API_CLIENT_CA_CHECK_USEC);
}

int api_client_ca_setup(struct api_server *s, struct ck_error **ret_error) {
        _cleanup_(ck_error_freep) struct ck_error *err = NULL;
        struct stat st;
        int r;

        assert(s && s->ssl_ctx && !isempty(s->o->client_ca_file));
        if (stat(s->o->client_ca_file, &st) < 0)
                st = (struct stat) {};
        r = load(s, &err);
        if (r < 0)
                return ck_error_set(ret_error, r == -ENOMEM ? r : -EINVAL,
                                    "unable to load client CA file (--client-ca-file) %s: %s", s->o->client_ca_file,
                                    ck_error_message(err));
        s->client_ca_stat = st;
        s->client_ca_loaded = true;
        s->client_ca_timer = evtimer_new(s->base, on_timer, s);
        if (!s->client_ca_timer || evtimer_add_usec(s->client_ca_timer, API_CLIENT_CA_CHECK_USEC) < 0)
                return -ENOMEM;
        return 0;
}

void api_client_ca_done(struct api_server *s) {
        if (s->client_ca_timer)
                event_free(s->client_ca_timer);
        s->client_ca_timer = NULL;
        free(s->client_ca_pem);
        s->client_ca_pem = NULL;
        s->client_ca_size = 0;
}
