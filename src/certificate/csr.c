/* SPDX-License-Identifier: Apache-2.0 */
#include "certificate/csr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"

/* a CertificateSigningRequest's certificate is a few kilobytes; a chain of a few */
#define CERT_MAX_SIZE (1024u * 1024u)

const char *const cert_client_usages[] = { "digital signature", "key encipherment", "client auth", NULL };
const char *const cert_serving_usages[] = { "digital signature", "key encipherment", "server auth", NULL };

void cert_template_done(struct cert_template *t) {
        if (!t)
                return;
        free(t->common_name);
        strv_free(t->organizations);
        strv_free(t->dns_names);
        strv_free(t->ip_addresses);
        *t = (struct cert_template) {};
}

/* *ret_error: WHAT, and OpenSSL's reason when it has one */
static int openssl_error(struct ck_error **ret_error, int code, const char *what) {
        unsigned long e = ERR_get_error();
        char buf[256];

        ERR_clear_error();
        if (e)
                ERR_error_string_n(e, buf, sizeof(buf));
        return ck_error_set(ret_error, code, "%s%s%s", what, e ? ": " : "", e ? buf : "");
}

/* the memory BIO's content as a NUL-terminated string */
static int bio_string(BIO *b, char **ret) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        char *s;

        if (n < 0)
                return -EIO;
        s = strndup(data, (size_t) n);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static EVP_PKEY *key_from_pem(const char *pem) {
        BIO *b = BIO_new_mem_buf(pem, -1);
        EVP_PKEY *k;

        if (!b)
                return NULL;
        k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
        BIO_free(b);
        ERR_clear_error();
        return k;
}

int cert_key_generate(char **ret_pem) {
        EVP_PKEY *k = EVP_EC_gen("P-256");
        BIO *b = BIO_new(BIO_s_mem());
        int r = -ENOMEM;

        if (k && b && PEM_write_bio_PrivateKey_traditional(b, k, NULL, NULL, 0, NULL, NULL) == 1)
                r = bio_string(b, ret_pem);
        ERR_clear_error();
        BIO_free(b);
        EVP_PKEY_free(k);
        return r;
}

bool cert_key_valid(const char *pem) {
        EVP_PKEY *k = pem ? key_from_pem(pem) : NULL;

        EVP_PKEY_free(k);
        return k != NULL;
}

static int ip_bytes(const char *ip, unsigned char *buf, size_t *ret_len) {
        if (inet_pton(AF_INET, ip, buf) == 1) {
                *ret_len = 4;
                return 0;
        }
        if (inet_pton(AF_INET6, ip, buf) == 1) {
                *ret_len = 16;
                return 0;
        }
        return -EINVAL;
}

static int add_sans(X509_REQ *req, const struct cert_template *t, struct ck_error **ret_error) {
        GENERAL_NAMES *gens;
        STACK_OF(X509_EXTENSION) *exts = NULL;
        X509_EXTENSION *ext = NULL;
        int r = -ENOMEM;

        if (strv_length(t->dns_names) == 0 && strv_length(t->ip_addresses) == 0)
                return 0;
        gens = sk_GENERAL_NAME_new_null();
        if (!gens)
                return -ENOMEM;
        for (char **d = t->dns_names; d && *d; d++) {
                GENERAL_NAME *g = GENERAL_NAME_new();
                ASN1_IA5STRING *s = ASN1_IA5STRING_new();
                if (!g || !s || !ASN1_STRING_set(s, *d, -1)) {
                        GENERAL_NAME_free(g);
                        ASN1_IA5STRING_free(s);
                        goto finish;
                }
                GENERAL_NAME_set0_value(g, GEN_DNS, s);
                if (!sk_GENERAL_NAME_push(gens, g)) {
                        GENERAL_NAME_free(g);
                        goto finish;
                }
        }
        for (char **ip = t->ip_addresses; ip && *ip; ip++) {
                unsigned char buf[16];
                size_t len;
                GENERAL_NAME *g;
                ASN1_OCTET_STRING *s;

                if (ip_bytes(*ip, buf, &len) < 0) {
                        r = ck_error_set(ret_error, -EINVAL, "invalid IP address \"%s\"", *ip);
                        goto finish;
                }
                g = GENERAL_NAME_new();
                s = ASN1_OCTET_STRING_new();
                if (!g || !s || !ASN1_OCTET_STRING_set(s, buf, (int) len)) {
                        GENERAL_NAME_free(g);
                        ASN1_OCTET_STRING_free(s);
                        goto finish;
                }
                GENERAL_NAME_set0_value(g, GEN_IPADD, s);
                if (!sk_GENERAL_NAME_push(gens, g)) {
                        GENERAL_NAME_free(g);
                        goto finish;
                }
        }
        exts = sk_X509_EXTENSION_new_null();
        ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, gens);
        if (!exts || !ext || !sk_X509_EXTENSION_push(exts, ext))
                goto finish;
        ext = NULL;
        if (!X509_REQ_add_extensions(req, exts))
                goto finish;
        r = 0;
finish:
        X509_EXTENSION_free(ext);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        GENERAL_NAMES_free(gens);
        ERR_clear_error();
        return r;
}

int cert_request_create(const char *key_pem, const struct cert_template *t, char **ret_pem,
                        struct ck_error **ret_error) {
        EVP_PKEY *key = key_from_pem(key_pem);
        X509_REQ *req = NULL;
        X509_NAME *name = NULL;
        BIO *b = NULL;
        int r = -ENOMEM;

        if (!key)
                return ck_error_set(ret_error, -EINVAL, "invalid private key for certificate request");
        req = X509_REQ_new();
        name = X509_NAME_new();
        if (!req || !name)
                goto finish;
        /* pkix.Name.ToRDNSequence's order: O before CN */
        for (char **o = t->organizations; o && *o; o++)
                if (!X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8, (const unsigned char *) *o,
                                                -1, -1, 0))
                        goto finish;
        if (!isempty(t->common_name) && !X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                                                                    (const unsigned char *) t->common_name, -1, -1, 0))
                goto finish;
        if (!X509_REQ_set_version(req, 0) || !X509_REQ_set_subject_name(req, name) || !X509_REQ_set_pubkey(req, key))
                goto finish;
        r = add_sans(req, t, ret_error);
        if (r < 0)
                goto finish;
        r = -ENOMEM;
        if (X509_REQ_sign(req, key, EVP_sha256()) <= 0) {
                r = openssl_error(ret_error, -EINVAL, "unable to sign the certificate request");
                goto finish;
        }
        b = BIO_new(BIO_s_mem());
        if (b && PEM_write_bio_X509_REQ(b, req) == 1)
                r = bio_string(b, ret_pem);
finish:
        ERR_clear_error();
        BIO_free(b);
        X509_NAME_free(name);
        X509_REQ_free(req);
        EVP_PKEY_free(key);
        return r;
}

/* base64.RawURLEncoding */
static char *base64url(const unsigned char *p, size_t n) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        char *out = malloc(n / 3 * 4 + 5), *o = out;
        size_t i;

        if (!out)
                return NULL;
        for (i = 0; i + 2 < n; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = alphabet[v >> 6 & 63];
                *o++ = alphabet[v & 63];
        }
        if (n - i == 1) {
                uint32_t v = (uint32_t) p[i] << 16;
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
        } else if (n - i == 2) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8;
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = alphabet[v >> 6 & 63];
        }
        *o = '\0';
        return out;
}

static bool digest_write(EVP_MD_CTX *ctx, const void *p, size_t n) {
        _cleanup_free_ char *enc = base64url(p, n);

        return enc && EVP_DigestUpdate(ctx, enc, strlen(enc)) == 1 && EVP_DigestUpdate(ctx, "|", 1) == 1;
}

int cert_request_digested_name(const char *key_pem, const struct cert_template *t, const char *const *usages,
                               char **ret) {
        EVP_PKEY *key = key_from_pem(key_pem);
        EVP_MD_CTX *ctx = NULL;
        unsigned char *der = NULL, md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        int derlen, r = -ENOMEM;
        bool ok;

        if (!key)
                return -EINVAL;
        derlen = i2d_PUBKEY(key, &der);
        ctx = EVP_MD_CTX_new();
        if (derlen <= 0 || !ctx || EVP_DigestInit_ex(ctx, EVP_sha512_256(), NULL) != 1)
                goto finish;
        ok = digest_write(ctx, der, (size_t) derlen) &&
             digest_write(ctx, strempty(t->common_name), strlen(strempty(t->common_name)));
        for (char **o = t->organizations; ok && o && *o; o++)
                ok = digest_write(ctx, *o, strlen(*o));
        for (const char *const *u = usages; ok && u && *u; u++)
                ok = digest_write(ctx, *u, strlen(*u));
        if (ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1) {
                _cleanup_free_ char *enc = base64url(md, mdlen);
                if (enc && asprintf(ret, "node-csr-%s", enc) >= 0)
                        r = 0;
        }
finish:
        ERR_clear_error();
        EVP_MD_CTX_free(ctx);
        OPENSSL_free(der);
        EVP_PKEY_free(key);
        return r;
}

bool cert_request_matches_key(const char *request_pem, const char *key_pem) {
        BIO *b = request_pem ? BIO_new_mem_buf(request_pem, -1) : NULL;
        X509_REQ *req = b ? PEM_read_bio_X509_REQ(b, NULL, NULL, NULL) : NULL;
        EVP_PKEY *key = key_pem ? key_from_pem(key_pem) : NULL;
        EVP_PKEY *pub = req ? X509_REQ_get0_pubkey(req) : NULL;
        bool ok = pub && key && EVP_PKEY_eq(pub, key) == 1 && X509_REQ_verify(req, pub) > 0;

        ERR_clear_error();
        EVP_PKEY_free(key);
        X509_REQ_free(req);
        BIO_free(b);
        return ok;
}

json_t *cert_csr_object(const char *name, const char *request_pem, const char *signer, const char *const *usages) {
        _cleanup_free_ char *enc = NULL;
        json_t *u = json_array(), *o;
        BIO *b64 = BIO_new(BIO_f_base64()), *mem = BIO_new(BIO_s_mem());

        if (!u || !b64 || !mem)
                goto fail;
        BIO_set_flags(b64, BIO_FLAGS_BASE64_NO_NL);
        b64 = BIO_push(b64, mem);
        mem = NULL;
        if (BIO_write(b64, request_pem, (int) strlen(request_pem)) <= 0 || BIO_flush(b64) != 1 ||
            bio_string(BIO_next(b64), &enc) < 0)
                goto fail;
        BIO_free_all(b64);
        b64 = NULL;
        for (const char *const *p = usages; p && *p; p++)
                if (json_array_append_new(u, json_string(*p)) < 0)
                        goto fail;
        o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:o}}", "apiVersion", "certificates.k8s.io/v1", "kind",
                      "CertificateSigningRequest", "metadata", name ? "name" : "generateName", name ? name : "csr-",
                      "spec", "request", enc, "signerName", signer, "usages", u);
        return o;
fail:
        json_decref(u);
        BIO_free_all(b64);
        BIO_free(mem);
        return NULL;
}

int cert_csr_state(const json_t *csr, enum cert_csr_state *ret, const char **ret_reason, const char **ret_message,
                   char **ret_certificate) {
        const json_t *status = json_object_get(csr, "status");
        const json_t *conds = json_object_get(status, "conditions"), *c, *approved = NULL;
        const char *certificate = json_string_value(json_object_get(status, "certificate"));
        size_t i;

        json_array_foreach(conds, i, c) {
                const char *type = json_string_value(json_object_get(c, "type"));
                if (streq_ptr(type, "Denied") || streq_ptr(type, "Failed")) {
                        *ret = streq(type, "Denied") ? CERT_CSR_DENIED : CERT_CSR_FAILED;
                        if (ret_reason)
                                *ret_reason = strempty(json_string_value(json_object_get(c, "reason")));
                        if (ret_message)
                                *ret_message = strempty(json_string_value(json_object_get(c, "message")));
                        return 0;
                }
                if (streq_ptr(type, "Approved"))
                        approved = c;
        }
        if (ret_reason)
                *ret_reason = approved ? strempty(json_string_value(json_object_get(approved, "reason"))) : "";
        if (ret_message)
                *ret_message = approved ? strempty(json_string_value(json_object_get(approved, "message"))) : "";
        if (!approved) {
                *ret = CERT_CSR_PENDING;
                return 0;
        }
        if (isempty(certificate)) {
                *ret = CERT_CSR_APPROVED;
                return 0;
        }
        if (ret_certificate) {
                size_t size;
                int r = base64_decode(certificate, CERT_MAX_SIZE, ret_certificate, &size);
                if (r < 0)
                        return r == -E2BIG ? r : -EINVAL;
        }
        *ret = CERT_CSR_ISSUED;
        return 0;
}

void cert_info_done(struct cert_info *i) {
        if (!i)
                return;
        free(i->common_name);
        strv_free(i->organizations);
        strv_free(i->dns_names);
        strv_free(i->ip_addresses);
        free(i->serial);
        *i = (struct cert_info) {};
}

static int asn1_time_usec(const ASN1_TIME *t, int64_t *ret) {
        struct tm tm = {};

        if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
                return -EINVAL;
        *ret = (int64_t) timegm(&tm) * 1000000;
        return 0;
}

static int name_entries(X509_NAME *n, int nid, char ***l) {
        int i = -1;

        while ((i = X509_NAME_get_index_by_NID(n, nid, i)) >= 0) {
                unsigned char *u = NULL;
                int r;
                if (ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i))) < 0)
                        return -EINVAL;
                r = strv_extend(l, (char *) u);
                OPENSSL_free(u);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int info_from_x509(X509 *x, struct cert_info *ret) {
        struct cert_info i = {};
        _cleanup_strv_free_ char **cns = NULL;
        GENERAL_NAMES *sans;
        BIGNUM *bn;
        int r;

        r = asn1_time_usec(X509_get0_notBefore(x), &i.not_before_usec);
        if (r >= 0)
                r = asn1_time_usec(X509_get0_notAfter(x), &i.not_after_usec);
        if (r >= 0)
                r = name_entries(X509_get_subject_name(x), NID_commonName, &cns);
        if (r >= 0)
                r = name_entries(X509_get_subject_name(x), NID_organizationName, &i.organizations);
        if (r >= 0 && cns) {
                i.common_name = strdup(cns[strv_length(cns) - 1]);
                if (!i.common_name)
                        r = -ENOMEM;
        }
        sans = r >= 0 ? X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL) : NULL;
        for (int k = 0; r >= 0 && k < sk_GENERAL_NAME_num(sans); k++) {
                GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, k);
                if (g->type == GEN_DNS) {
                        _cleanup_free_ char *s = strndup((const char *) ASN1_STRING_get0_data(g->d.dNSName),
                                                         (size_t) ASN1_STRING_length(g->d.dNSName));
                        r = s ? strv_extend(&i.dns_names, s) : -ENOMEM;
                } else if (g->type == GEN_IPADD) {
                        char buf[INET6_ADDRSTRLEN];
                        int len = ASN1_STRING_length(g->d.iPAddress);
                        const unsigned char *p = ASN1_STRING_get0_data(g->d.iPAddress);
                        if ((len == 4 && inet_ntop(AF_INET, p, buf, sizeof(buf))) ||
                            (len == 16 && inet_ntop(AF_INET6, p, buf, sizeof(buf))))
                                r = strv_extend(&i.ip_addresses, buf);
                }
        }
        GENERAL_NAMES_free(sans);
        bn = r >= 0 ? ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL) : NULL;
        if (bn) {
                char *hex = BN_bn2hex(bn);
                i.serial = hex ? strdup(hex) : NULL;
                OPENSSL_free(hex);
                BN_free(bn);
        }
        ERR_clear_error();
        if (r < 0) {
                cert_info_done(&i);
                return r;
        }
        *ret = i;
        return 0;
}

int cert_pair_parse(const char *pem, size_t len, char **ret_cert_pem, char **ret_key_pem, struct cert_info *ret_info,
                    struct ck_error **ret_error) {
        BIO *in = NULL, *certs = NULL, *keyout = NULL;
        EVP_PKEY *key = NULL;
        X509 *leaf = NULL, *x;
        _cleanup_free_ char *cert_pem = NULL, *key_pem = NULL;
        struct cert_info info = {};
        int r = -ENOMEM, n = 0;

        if (len > CERT_MAX_SIZE)
                return ck_error_set(ret_error, -EFBIG, "the file is too large for a certificate and key");
        in = BIO_new_mem_buf(pem, (int) len);
        certs = BIO_new(BIO_s_mem());
        if (!in || !certs)
                goto finish;
        /* every certificate, re-encoded (as upstream's store writes them) */
        while ((x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
                if (PEM_write_bio_X509(certs, x) != 1) {
                        X509_free(x);
                        goto finish;
                }
                if (n++ == 0)
                        leaf = x;
                else
                        X509_free(x);
        }
        ERR_clear_error();
        if (!leaf) {
                r = ck_error_set(ret_error, -EINVAL, "no certificate in it");
                goto finish;
        }
        BIO_free(in);
        in = BIO_new_mem_buf(pem, (int) len);
        key = in ? PEM_read_bio_PrivateKey(in, NULL, NULL, NULL) : NULL;
        if (!key) {
                r = ck_error_set(ret_error, -EINVAL, "no private key in it");
                goto finish;
        }
        if (X509_check_private_key(leaf, key) != 1) {
                r = ck_error_set(ret_error, -EINVAL, "the private key does not match the certificate");
                goto finish;
        }
        keyout = BIO_new(BIO_s_mem());
        if (!keyout || PEM_write_bio_PrivateKey_traditional(keyout, key, NULL, NULL, 0, NULL, NULL) != 1 ||
            bio_string(keyout, &key_pem) < 0 || bio_string(certs, &cert_pem) < 0)
                goto finish;
        r = info_from_x509(leaf, &info);
        if (r < 0) {
                (void) ck_error_set(ret_error, r, "the certificate's validity or subject cannot be read");
                goto finish;
        }
        if (ret_cert_pem)
                *ret_cert_pem = TAKE_PTR(cert_pem);
        if (ret_key_pem)
                *ret_key_pem = TAKE_PTR(key_pem);
        if (ret_info)
                *ret_info = info;
        else
                cert_info_done(&info);
        r = 0;
finish:
        ERR_clear_error();
        if (key_pem)
                explicit_bzero(key_pem, strlen(key_pem));
        EVP_PKEY_free(key);
        X509_free(leaf);
        BIO_free(in);
        BIO_free(certs);
        BIO_free(keyout);
        return r;
}

int64_t cert_rotation_deadline(const struct cert_info *i, double jitter01) {
        double total = (double) (i->not_after_usec - i->not_before_usec);

        if (!(jitter01 >= 0))
                jitter01 = 0;
        if (jitter01 >= 1)
                jitter01 = 0.999999;
        /* wait.Jitter(total, 0.2) - 0.3*total: 70% plus up to 20% */
        return i->not_before_usec + (int64_t) (total * (0.7 + 0.2 * jitter01));
}

static bool subset(char *const *want, char *const *have) {
        for (char *const *w = want; w && *w; w++)
                if (!strv_contains(have, *w))
                        return false;
        return true;
}

bool cert_satisfies_template(const struct cert_info *i, const struct cert_template *t) {
        return streq_ptr(i->common_name, t->common_name) && subset(t->organizations, i->organizations) &&
               subset(t->dns_names, i->dns_names) && subset(t->ip_addresses, i->ip_addresses);
}
