/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet-lib-floor: what ckubelet's libraries alone put in a process's resident set, the floor under ckubelet's
 * VmRSS.
 *
 *   ckubelet-lib-floor
 *
 * It is linked against every library ckubelet is linked against (meson's ckubelet_deps, without --as-needed, so
 * the loader maps all of them and their dependencies, as for ckubelet) and does nothing of ckubelet's own. It
 * prints VmRSS, RssAnon and RssFile (/proc/self/status) and the number of shared objects mapped:
 *
 *   loaded    at the start of main: the libraries mapped, relocated and their constructors run
 *   openssl   after OPENSSL_init_ssl() with the configuration file, as ckubelet's first TLS context does
 *   tls       after what ckubelet's TLS server does at start: an SSL_CTX and a P-256 key (the self-signed
 *             serving certificate's)
 *
 * bench/README.md ("Latest full run") sets these against ckubelet's own VmRSS. */
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

static void show(const char *stage) {
        char line[256], prev[512] = "";
        long rss = -1, anon = -1, file = -1, objects = 0;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f) {
                perror("/proc/self/status");
                return;
        }
        while (fgets(line, sizeof(line), f)) {
                (void) (sscanf(line, "VmRSS: %ld", &rss) || sscanf(line, "RssAnon: %ld", &anon) ||
                        sscanf(line, "RssFile: %ld", &file));
        }
        fclose(f);
        /* shared objects: each file mapped with ".so" in its name, counted once (its mappings are adjacent) */
        f = fopen("/proc/self/maps", "re");
        if (f) {
                while (fgets(line, sizeof(line), f)) {
                        const char *path = strchr(line, '/');
                        if (path && strstr(path, ".so") && strcmp(path, prev) != 0) {
                                objects++;
                                snprintf(prev, sizeof(prev), "%s", path);
                        }
                }
                fclose(f);
        }
        printf("%-7s VmRSS %6ld kB  RssAnon %6ld kB  RssFile %6ld kB  shared objects %ld\n", stage, rss, anon, file,
               objects);
}

int main(void) {
        SSL_CTX *ctx;
        EVP_PKEY *key;

        show("loaded");
        if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1) {
                fprintf(stderr, "OPENSSL_init_ssl failed\n");
                return 1;
        }
        show("openssl");
        ctx = SSL_CTX_new(TLS_server_method());
        key = EVP_EC_gen("P-256");
        if (!ctx || !key) {
                fprintf(stderr, "cannot create a TLS context and a P-256 key\n");
                return 1;
        }
        show("tls");
        EVP_PKEY_free(key);
        SSL_CTX_free(ctx);
        return 0;
}
