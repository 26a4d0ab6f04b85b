/* SPDX-License-Identifier: Apache-2.0 */
/* podCertificate and clusterTrustBundle: the pure parts, see podcert.h. */

#include "objects/podcert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"

static const char *const key_types[] = { "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519" };

bool podcert_key_type_valid(const char *key_type) {
        for (size_t i = 0; key_type && i < ELEMENTSOF(key_types); i++)
                if (streq(key_type, key_types[i]))
                        return true;
        return false;
}

static EVP_PKEY *generate_key(const char *t, const EVP_MD **ret_md) {
        *ret_md = EVP_sha256();
        if (streq(t, "RSA3072"))
                return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) 3072);
        if (streq(t, "RSA4096"))
                return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) 4096);
        if (streq(t, "ECDSAP256"))
                return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        if (streq(t, "ECDSAP384")) {
                *ret_md = EVP_sha384();
                return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
        }
        if (streq(t, "ECDSAP521")) {
                *ret_md = EVP_sha512();
                return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-521");
        }
        *ret_md = NULL; /* Ed25519 signs the message itself */
        return EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
}

static int bio_string(BIO *b, char **ret) {
        char *data = NULL;
        long n = BIO_get_mem_data(b, &data);
        char *s;

        if (n < 0)
                return -EIO;
        s = strndup(data ? data : "", (size_t) n);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int podcert_generate(const char *key_type, char **ret_key_pem, char **ret_csr_b64) {
        const EVP_MD *md = NULL;
        EVP_PKEY *key = NULL;
        X509_REQ *req = NULL;
        BIO *b = NULL;
        unsigned char *der = NULL;
        char *pem = NULL, *csr = NULL;
        int len, r = -EIO;

        if (!podcert_key_type_valid(key_type))
                return -EINVAL;
        key = generate_key(key_type, &md);
        req = X509_REQ_new();
        b = BIO_new(BIO_s_mem());
        if (!key || !req || !b)
                goto out;
        /* PKCS#8, as x509.MarshalPKCS8PrivateKey */
        if (PEM_write_bio_PKCS8PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)
                goto out;
        r = bio_string(b, &pem);
        if (r < 0)
                goto out;
        r = -EIO;
        if (X509_REQ_set_version(req, 0) != 1 || X509_REQ_set_pubkey(req, key) != 1 || X509_REQ_sign(req, key, md) <= 0)
                goto out;
        len = i2d_X509_REQ(req, &der);
        if (len <= 0)
                goto out;
        csr = base64_encode(der, (size_t) len);
        if (!csr) {
                r = -ENOMEM;
                goto out;
        }
        *ret_key_pem = TAKE_PTR(pem);
        *ret_csr_b64 = TAKE_PTR(csr);
        r = 0;
out:
        if (pem)
                OPENSSL_cleanse(pem, strlen(pem));
        free(pem);
        OPENSSL_free(der);
        BIO_free(b);
        X509_REQ_free(req);
        EVP_PKEY_free(key);
        ERR_clear_error();
        return r;
}

/* Call fn for the DER of every PEM block of in (any type; text around and between the blocks skipped). */
static int pem_foreach(const char *in, size_t size, int (*fn)(const unsigned char *der, long len, void *ud), void *ud) {
        BIO *b = BIO_new_mem_buf(in, (int) MIN(size, (size_t) INT32_MAX));
        int r = 0;

        if (!b)
                return -ENOMEM;
        for (;;) {
                char *name = NULL, *header = NULL;
                unsigned char *data = NULL;
                long len = 0;
                if (PEM_read_bio(b, &name, &header, &data, &len) != 1)
                        break; /* no more blocks (or a broken one: pem.Decode stops there too) */
                r = fn(data, len, ud);
                OPENSSL_free(name);
                OPENSSL_free(header);
                OPENSSL_free(data);
                if (r < 0)
                        break;
        }
        ERR_clear_error();
        BIO_free(b);
        return r;
}

static int write_cert_block(const unsigned char *der, long len, void *ud) {
        return PEM_write_bio(ud, "CERTIFICATE", "", der, len) > 0 ? 0 : -EIO;
}

int podcert_clean_chain(const char *in, size_t size, char **ret) {
        BIO *out = BIO_new(BIO_s_mem());
        int r;

        if (!out)
                return -ENOMEM;
        r = pem_foreach(in, size, write_cert_block, out);
        if (r >= 0)
                r = bio_string(out, ret);
        BIO_free(out);
        return r;
}

void podcert_issued_done(struct podcert_issued *i) {
        if (!i)
                return;
        free(i->chain);
        *i = (struct podcert_issued) {};
}

static int time_field(json_t *status, const char *key, int64_t *ret) {
        const char *s = json_string_value(json_object_get(status, key));
        int64_t nsec;

        if (!s || parse_rfc3339(s, &nsec) < 0)
                return -EBADMSG;
        *ret = nsec / 1000000000;
        return 0;
}

int podcert_pcr_outcome(json_t *pcr, enum podcert_outcome *ret, struct podcert_issued *ret_issued,
                        const char **ret_reason, const char **ret_message) {
        json_t *status = json_object_get(pcr, "status"), *cond;
        size_t i;

        json_array_foreach(json_object_get(status, "conditions"), i, cond) {
                const char *type = json_string_value(json_object_get(cond, "type"));
                if (streq_ptr(type, "Denied") || streq_ptr(type, "Failed")) {
                        *ret = streq(type, "Denied") ? PODCERT_DENIED : PODCERT_FAILED;
                        *ret_reason = strempty(json_string_value(json_object_get(cond, "reason")));
                        *ret_message = strempty(json_string_value(json_object_get(cond, "message")));
                        return 0;
                }
                if (streq_ptr(type, "Issued")) {
                        json_t *chain = json_object_get(status, "certificateChain");
                        struct podcert_issued is = {};
                        int r;
                        if (!json_is_string(chain) || json_string_length(chain) > PODCERT_MAX_CHAIN_SIZE ||
                            time_field(status, "beginRefreshAt", &is.begin_refresh_at) < 0 ||
                            time_field(status, "notAfter", &is.not_after) < 0)
                                return -EBADMSG;
                        r = podcert_clean_chain(json_string_value(chain), json_string_length(chain), &is.chain);
                        if (r < 0)
                                return r;
                        if (isempty(is.chain)) {
                                podcert_issued_done(&is);
                                return -EBADMSG;
                        }
                        *ret = PODCERT_ISSUED;
                        *ret_issued = is;
                        return 0;
                }
        }
        *ret = PODCERT_PENDING;
        return 0;
}

int64_t podcert_refresh_at(int64_t begin_refresh_at, int64_t jitter) {
        if (jitter < 0)
                jitter = 0;
        return begin_refresh_at + jitter % PODCERT_JITTER_SECONDS;
}

/* ---------------------------------------------------------------- ClusterTrustBundles */

static bool expression_holds(const json_t *e, const json_t *labels) {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        const json_t *have = key ? json_object_get(labels, key) : NULL, *v;
        bool in = false;
        size_t i;

        if (!key || !op)
                return false;
        json_array_foreach(json_object_get(e, "values"), i, v)
                if (json_is_string(have) && json_equal((json_t *) have, (json_t *) v))
                        in = true;
        if (streq(op, "In"))
                return in;
        if (streq(op, "NotIn"))
                return !in; /* a missing label is "not in" */
        if (streq(op, "Exists"))
                return have != NULL;
        if (streq(op, "DoesNotExist"))
                return have == NULL;
        return false;
}

bool podcert_selector_matches(const json_t *sel, const json_t *labels) {
        const char *k;
        json_t *v;
        size_t i;

        if (!json_is_object(sel))
                return false;
        json_object_foreach((json_t *) json_object_get(sel, "matchLabels"), k, v) {
                const json_t *have = json_object_get(labels, k);
                if (!have || !json_equal((json_t *) have, v))
                        return false;
        }
        json_array_foreach(json_object_get(sel, "matchExpressions"), i, v)
                if (!expression_holds(v, labels))
                        return false;
        return true;
}

struct anchors {
        unsigned char **der;
        long *len;
        size_t n;
        size_t total;
};

static int add_anchor(const unsigned char *der, long len, void *ud) {
        struct anchors *a = ud;
        unsigned char **nd;
        long *nl;

        for (size_t i = 0; i < a->n; i++)
                if (a->len[i] == len && memcmp(a->der[i], der, (size_t) len) == 0)
                        return 0;
        if ((a->total += (size_t) len) > PODCERT_MAX_BUNDLE_SIZE)
                return -E2BIG;
        nd = realloc(a->der, (a->n + 1) * sizeof(*nd));
        if (!nd)
                return -ENOMEM;
        a->der = nd;
        nl = realloc(a->len, (a->n + 1) * sizeof(*nl));
        if (!nl)
                return -ENOMEM;
        a->len = nl;
        if (!(a->der[a->n] = malloc((size_t) len ? (size_t) len : 1)))
                return -ENOMEM;
        memcpy(a->der[a->n], der, (size_t) len);
        a->len[a->n++] = len;
        return 0;
}

static int compare_der(const unsigned char *a, long al, const unsigned char *b, long bl) {
        int c = memcmp(a, b, (size_t) MIN(al, bl));
        return c ? c : (al > bl) - (al < bl);
}

int podcert_trust_anchors(const json_t *bundles, const char *name, const char *signer_name, const json_t *sel,
                          char **ret, size_t *ret_size) {
        struct anchors a = {};
        const json_t *b;
        size_t i, matched = 0;
        uint64_t seed = 1469598103934665603ULL;
        BIO *out = NULL;
        char *s = NULL;
        int r = 0;

        json_array_foreach(bundles, i, b) {
                const json_t *meta = json_object_get(b, "metadata"), *spec = json_object_get(b, "spec");
                const char *tb = json_string_value(json_object_get(spec, "trustBundle"));
                if (name) {
                        if (!streq_ptr(json_string_value(json_object_get(meta, "name")), name))
                                continue;
                } else if (!streq_ptr(json_string_value(json_object_get(spec, "signerName")), signer_name) ||
                           !podcert_selector_matches(sel, json_object_get(meta, "labels")))
                        continue;
                matched++;
                if (tb && (r = pem_foreach(tb, strlen(tb), add_anchor, &a)) < 0)
                        goto out;
        }
        if (matched == 0) {
                r = -ENOENT;
                goto out;
        }
        /* sorted (sets.List), then shuffled with a seed taken from the anchors themselves */
        for (size_t x = 1; x < a.n; x++)
                for (size_t y = x; y > 0 && compare_der(a.der[y - 1], a.len[y - 1], a.der[y], a.len[y]) > 0; y--) {
                        unsigned char *td = a.der[y];
                        long tl = a.len[y];
                        a.der[y] = a.der[y - 1];
                        a.len[y] = a.len[y - 1];
                        a.der[y - 1] = td;
                        a.len[y - 1] = tl;
                }
        for (size_t x = 0; x < a.n; x++)
                for (long k = 0; k < a.len[x]; k++)
                        seed = (seed ^ a.der[x][k]) * 1099511628211ULL;
        for (size_t x = a.n; x > 1; x--) {
                size_t y;
                unsigned char *td;
                long tl;
                seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
                y = (size_t) ((seed * 2685821657736338717ULL) % x);
                td = a.der[x - 1], tl = a.len[x - 1];
                a.der[x - 1] = a.der[y], a.len[x - 1] = a.len[y];
                a.der[y] = td, a.len[y] = tl;
        }
        out = BIO_new(BIO_s_mem());
        if (!out) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t x = 0; x < a.n && r >= 0; x++)
                r = write_cert_block(a.der[x], a.len[x], out);
        if (r >= 0)
                r = bio_string(out, &s);
        if (r >= 0) {
                *ret_size = strlen(s);
                *ret = s;
        }
out:
        BIO_free(out);
        for (size_t x = 0; x < a.n; x++)
                free(a.der[x]);
        free(a.der);
        free(a.len);
        return r;
}
