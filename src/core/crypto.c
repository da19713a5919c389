/* SPDX-License-Identifier: MIT */
/*
 * crypto: thin wrappers over OpenSSL 3 so that no other file includes an OpenSSL header.
 */
#include "crypto.h"

#include "err.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fill 'out' with 'n' bytes from the CSPRNG. Returns 0 or ERR_INTERNAL. */
int crypto_random(void *out, size_t n)
{
    if (n > 0x7fffffff || RAND_bytes(out, (int)n) != 1)
        return ERR_INTERNAL;
    return 0;
}

/* HMAC-SHA256 of 'msg' under 'key' into 'out'. Returns 0 or ERR_INTERNAL. */
int crypto_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                       unsigned char out[CRYPTO_SHA256_LEN])
{
    unsigned int outlen = 0;
    if (keylen > 0x7fffffff)
        return ERR_INTERNAL;
    if (!HMAC(EVP_sha256(), key, (int)keylen, msg, msglen, out, &outlen) ||
        outlen != CRYPTO_SHA256_LEN)
        return ERR_INTERNAL;
    return 0;
}

/*
 * A keyed HMAC-SHA256: the key is set up once, and each message is signed on a copy of that
 * state. HMAC() fetches the digest and sets the key on every call (1 µs here, and a global lock
 * under load); the copy costs a third of that and takes no lock.
 */
struct crypto_hmac {
    EVP_MAC *mac;
    EVP_MAC_CTX *keyed;
};

/* A MAC keyed with the 'keylen' bytes of 'key'; NULL on failure. Free with crypto_hmac_free(). */
struct crypto_hmac *crypto_hmac_new(const void *key, size_t keylen)
{
    struct crypto_hmac *h = calloc(1, sizeof(*h));
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    if (!h)
        return NULL;
    h->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    h->keyed = h->mac ? EVP_MAC_CTX_new(h->mac) : NULL;
    if (!h->keyed || EVP_MAC_init(h->keyed, key, keylen, params) != 1) {
        crypto_hmac_free(h);
        return NULL;
    }
    return h;
}

/* HMAC of 'msg' into 'out' under the key of 'h'. Safe from several threads at once ('h' is only
 * read). 0 or ERR_INTERNAL. */
int crypto_hmac_sign(const struct crypto_hmac *h, const void *msg, size_t len,
                     unsigned char out[CRYPTO_SHA256_LEN])
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(h->keyed);
    size_t outlen = 0;
    int ok = c && EVP_MAC_update(c, msg, len) == 1 &&
             EVP_MAC_final(c, out, &outlen, CRYPTO_SHA256_LEN) == 1 && outlen == CRYPTO_SHA256_LEN;
    EVP_MAC_CTX_free(c);
    return ok ? 0 : ERR_INTERNAL;
}

/* Free 'h'; NULL is a no-op. */
void crypto_hmac_free(struct crypto_hmac *h)
{
    if (!h)
        return;
    EVP_MAC_CTX_free(h->keyed);
    EVP_MAC_free(h->mac);
    free(h);
}

/* SHA-256 of 'msg' into 'out'. */
void crypto_sha256(const void *msg, size_t len, unsigned char out[CRYPTO_SHA256_LEN])
{
    unsigned int outlen = 0;
    EVP_Digest(msg, len, out, &outlen, EVP_sha256(), NULL);
}

/* Compare 'n' bytes in time independent of where they differ. */
bool crypto_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

/* Lower-case hex of 'n' bytes into 'out' (2n+1 bytes, NUL-terminated). */
void crypto_hex(const unsigned char *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* A new incremental SHA-256; the caller frees it with crypto_sha256_free(). */
struct crypto_sha256 *crypto_sha256_new(void)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c);
        c = NULL;
    }
    return (struct crypto_sha256 *)c;
}

/* Hash 'n' more bytes. */
void crypto_sha256_update(struct crypto_sha256 *h, const void *p, size_t n)
{
    EVP_DigestUpdate((EVP_MD_CTX *)h, p, n);
}

/* The digest of everything hashed so far (call once). */
void crypto_sha256_final(struct crypto_sha256 *h, unsigned char out[CRYPTO_SHA256_LEN])
{
    unsigned int len = 0;
    EVP_DigestFinal_ex((EVP_MD_CTX *)h, out, &len);
}

/* Free 'h'; NULL is a no-op. */
void crypto_sha256_free(struct crypto_sha256 *h)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

/* See crypto.h. Extract, then expand, as RFC 5869 writes them, over HMAC-SHA256. */
int crypto_hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
                       const void *info, size_t info_len, void *out, size_t n)
{
    unsigned char prk[CRYPTO_SHA256_LEN], t[CRYPTO_SHA256_LEN], block[CRYPTO_SHA256_LEN + 256];
    unsigned char zero[CRYPTO_SHA256_LEN] = {0};
    size_t done = 0, tlen = 0;
    int rc = ERR_INTERNAL;

    if (n == 0 || n > 255 * CRYPTO_SHA256_LEN || info_len > 255)
        return ERR_INTERNAL;
    if (crypto_hmac_sha256(salt_len ? salt : zero, salt_len ? salt_len : sizeof(zero), ikm, ikm_len,
                           prk))
        goto out;
    for (unsigned i = 1; done < n; i++) {
        size_t len = 0, take;
        memcpy(block, t, tlen); /* T(i-1) | info | i */
        len = tlen;
        memcpy(block + len, info, info_len);
        len += info_len;
        block[len++] = (unsigned char)i;
        if (crypto_hmac_sha256(prk, sizeof(prk), block, len, t))
            goto out;
        tlen = sizeof(t);
        take = n - done < tlen ? n - done : tlen;
        memcpy((unsigned char *)out + done, t, take);
        done += take;
    }
    rc = 0;
out:
    OPENSSL_cleanse(prk, sizeof(prk));
    OPENSSL_cleanse(t, sizeof(t));
    OPENSSL_cleanse(block, sizeof(block));
    return rc;
}

/* See crypto.h. */
int crypto_seal(const unsigned char key[CRYPTO_SEAL_KEY_LEN], const void *aad, size_t aad_len,
                const void *in, size_t n, unsigned char *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char *nonce = out, *ct = out + CRYPTO_SEAL_NONCE_LEN, *tag = ct + n;
    int len = 0, rc = ERR_INTERNAL;

    if (!ctx || n > 0x7fffff00 || aad_len > 0x7fffffff)
        goto out;
    if (crypto_random(nonce, CRYPTO_SEAL_NONCE_LEN))
        goto out;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) != 1)
        goto out;
    if (aad_len && EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1)
        goto out;
    if (n && EVP_EncryptUpdate(ctx, ct, &len, in, (int)n) != 1)
        goto out;
    if (EVP_EncryptFinal_ex(ctx, ct + (n ? len : 0), &len) != 1)
        goto out;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, CRYPTO_SEAL_TAG_LEN, tag) != 1)
        goto out;
    rc = 0;
out:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* See crypto.h. */
int crypto_open(const unsigned char key[CRYPTO_SEAL_KEY_LEN], const void *aad, size_t aad_len,
                const unsigned char *in, size_t n, void *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    const unsigned char *ct = in + CRYPTO_SEAL_NONCE_LEN;
    size_t ct_len = n >= CRYPTO_SEAL_OVERHEAD ? n - CRYPTO_SEAL_OVERHEAD : 0;
    unsigned char tag[CRYPTO_SEAL_TAG_LEN]; /* a copy: OpenSSL takes it as writable */
    int len = 0, rc = ERR_INTERNAL;

    if (!ctx)
        goto out;
    rc = ERR_INVALID;
    if (n < CRYPTO_SEAL_OVERHEAD || ct_len > 0x7fffff00 || aad_len > 0x7fffffff)
        goto out;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, in) != 1)
        goto out;
    if (aad_len && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1)
        goto out;
    if (ct_len && EVP_DecryptUpdate(ctx, out, &len, ct, (int)ct_len) != 1)
        goto out;
    memcpy(tag, ct + ct_len, sizeof(tag));
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, CRYPTO_SEAL_TAG_LEN, tag) != 1)
        goto out;
    if (EVP_DecryptFinal_ex(ctx, (unsigned char *)out + (ct_len ? len : 0), &len) != 1)
        goto out; /* the tag does not match: altered, or another key or aad */
    rc = 0;
out:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* Base64 of 'in' in the alphabet 'abc', with '=' padding when 'pad'. */
static void base64(const char *abc, bool pad, const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = abc[v >> 18];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = abc[(v >> 6) & 63];
        out[o++] = abc[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)in[i] << 16;
        out[o++] = abc[v >> 18];
        out[o++] = abc[(v >> 12) & 63];
        if (pad) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        out[o++] = abc[v >> 18];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = abc[(v >> 6) & 63];
        if (pad)
            out[o++] = '=';
    }
    out[o] = '\0';
}

/* See crypto.h. */
void crypto_base64(const unsigned char *in, size_t n, char *out)
{
    base64("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true, in, n, out);
}

/* See crypto.h. */
void crypto_base64url(const unsigned char *in, size_t n, char *out)
{
    base64("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false, in, n, out);
}

/* ---- Standard Webhooks ---- */

static const char whsec_prefix[] = "whsec_";
#define WHSEC_PREFIX_LEN (sizeof(whsec_prefix) - 1)

/* The value of the base64 digit 'c' (the URL-safe alphabet when 'url'), or -1. */
static int b64_digit(unsigned char c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

/*
 * Decode the 'len' bytes of base64 at 's' (the URL-safe alphabet, never padded, when 'url')
 * into 'out' (room for 'cap' bytes), the count into '*out_len'. Padding may be left out, but
 * when present it completes the last quantum; the bits a short quantum leaves over must be zero
 * (one text per key). 0 or ERR_INVALID.
 */
static int b64_decode(const char *s, size_t len, bool url, unsigned char *out, size_t cap,
                      size_t *out_len)
{
    size_t pad = 0, n = 0;
    unsigned v = 0, bits = 0;

    while (!url && pad < 2 && pad < len && s[len - 1 - pad] == '=')
        pad++;
    if (pad && len % 4 != 0)
        return ERR_INVALID;
    len -= pad;
    if (len % 4 == 1)
        return ERR_INVALID;
    for (size_t i = 0; i < len; i++) {
        int d = b64_digit((unsigned char)s[i], url);
        if (d < 0)
            return ERR_INVALID;
        v = (v << 6 | (unsigned)d) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n == cap)
                return ERR_INVALID;
            out[n++] = (unsigned char)(v >> bits);
        }
    }
    if (v & ((1u << bits) - 1))
        return ERR_INVALID; /* left-over bits set: not the canonical text of these bytes */
    *out_len = n;
    return 0;
}

/* See crypto.h. */
int crypto_whsec_new(char out[CRYPTO_WHSEC_STR_LEN])
{
    unsigned char key[CRYPTO_WHSEC_KEY_LEN];
    if (crypto_random(key, sizeof(key)))
        return ERR_INTERNAL;
    memcpy(out, whsec_prefix, WHSEC_PREFIX_LEN);
    crypto_base64(key, sizeof(key), out + WHSEC_PREFIX_LEN);
    OPENSSL_cleanse(key, sizeof(key));
    return 0;
}

/* See crypto.h. */
int crypto_whsec_decode(const char *s, size_t len, unsigned char out[CRYPTO_WHSEC_KEY_MAX],
                        size_t *out_len)
{
    size_t n = 0;
    if (len < WHSEC_PREFIX_LEN || memcmp(s, whsec_prefix, WHSEC_PREFIX_LEN) != 0)
        return ERR_INVALID;
    if (b64_decode(s + WHSEC_PREFIX_LEN, len - WHSEC_PREFIX_LEN, false, out, CRYPTO_WHSEC_KEY_MAX,
                   &n))
        return ERR_INVALID;
    if (n < CRYPTO_WHSEC_KEY_MIN)
        return ERR_INVALID;
    *out_len = n;
    return 0;
}

/* True when 'id' may stand before the first '.' of the signed content: printable ASCII, no
 * space and no '.' (else "a.b" + "c" and "a" + "b.c" would sign alike). */
static bool msg_id_ok(const char *id)
{
    if (!*id)
        return false;
    for (; *id; id++) {
        if (*id <= ' ' || *id > '~' || *id == '.')
            return false;
    }
    return true;
}

/* See crypto.h. The content is fed to the MAC in pieces, so the body is never copied. */
int crypto_whsec_sign(const char *secret, size_t len, const char *msg_id, int64_t ts,
                      const void *body, size_t body_len, char out[CRYPTO_WHSIG_LEN])
{
    unsigned char key[CRYPTO_WHSEC_KEY_MAX], mac[CRYPTO_SHA256_LEN];
    char stamp[24];
    size_t keylen = 0, maclen = 0;
    int stamp_len, rc = ERR_INVALID;
    EVP_MAC *m = NULL;
    EVP_MAC_CTX *c = NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};

    if (crypto_whsec_decode(secret, len, key, &keylen) || !msg_id_ok(msg_id))
        goto out;
    stamp_len = snprintf(stamp, sizeof(stamp), ".%" PRId64 ".", ts);
    rc = ERR_INTERNAL;
    m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    c = m ? EVP_MAC_CTX_new(m) : NULL;
    if (!c || EVP_MAC_init(c, key, keylen, params) != 1)
        goto out;
    if (EVP_MAC_update(c, (const unsigned char *)msg_id, strlen(msg_id)) != 1 ||
        EVP_MAC_update(c, (const unsigned char *)stamp, (size_t)stamp_len) != 1 ||
        EVP_MAC_update(c, body, body_len) != 1)
        goto out;
    if (EVP_MAC_final(c, mac, &maclen, sizeof(mac)) != 1 || maclen != sizeof(mac))
        goto out;
    memcpy(out, "v1,", 3);
    crypto_base64(mac, sizeof(mac), out + 3);
    rc = 0;
out:
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

/* See crypto.h. */
int crypto_base64url_decode(const char *s, size_t len, unsigned char *out, size_t cap,
                            size_t *out_len)
{
    return b64_decode(s, len, true, out, cap, out_len);
}

/* ---- JWS signatures ---- */

/* The RSA public key (n, e) of 'k' as a new EVP_PKEY, or NULL when it is malformed. */
static EVP_PKEY *rsa_key(const struct crypto_jwk *k)
{
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *n = NULL, *e = NULL;

    if (!k->n || !k->e || k->n_len < CRYPTO_RSA_N_MIN || k->n_len > CRYPTO_RSA_N_MAX ||
        k->e_len == 0 || k->e_len > CRYPTO_RSA_E_MAX || k->n[0] == 0)
        return NULL; /* a leading zero byte: the modulus is shorter than it claims */
    n = BN_bin2bn(k->n, (int)k->n_len, NULL);
    e = BN_bin2bn(k->e, (int)k->e_len, NULL);
    bld = OSSL_PARAM_BLD_new();
    if (!n || !e || !bld || BN_is_one(e) || !BN_is_odd(e))
        goto out;
    if (!OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
        goto out;
    params = OSSL_PARAM_BLD_to_param(bld);
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pkey = NULL;
out:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);
    return pkey;
}

/* The P-256 public key (x, y) of 'k' as a new EVP_PKEY, or NULL when the point is not on the
 * curve. */
static EVP_PKEY *p256_key(const struct crypto_jwk *k)
{
    unsigned char point[1 + 2 * CRYPTO_P256_LEN];
    char group[] = "prime256v1";
    OSSL_PARAM params[3];
    EVP_PKEY_CTX *ctx = NULL, *check = NULL;
    EVP_PKEY *pkey = NULL;

    if (!k->x || !k->y)
        return NULL;
    point[0] = 0x04; /* uncompressed */
    memcpy(point + 1, k->x, CRYPTO_P256_LEN);
    memcpy(point + 1 + CRYPTO_P256_LEN, k->y, CRYPTO_P256_LEN);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point));
    params[2] = OSSL_PARAM_construct_end();
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
        goto out;
    check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (!check || EVP_PKEY_public_check(check) != 1) { /* on the curve, not infinity */
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
out:
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

/* The DER ECDSA-Sig-Value of the raw 'r || s' of an ES256 signature into a new buffer
 * (OPENSSL_free) of '*n' bytes, or NULL. */
static unsigned char *es256_der(const unsigned char *sig, int *n)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, CRYPTO_P256_LEN, NULL);
    BIGNUM *s = BN_bin2bn(sig + CRYPTO_P256_LEN, CRYPTO_P256_LEN, NULL);
    unsigned char *der = NULL;

    *n = 0;
    if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(es);
        return NULL;
    }
    *n = i2d_ECDSA_SIG(es, &der); /* 'es' owns r and s now */
    ECDSA_SIG_free(es);
    if (*n <= 0) {
        OPENSSL_free(der);
        return NULL;
    }
    return der;
}

/* See crypto.h. */
int crypto_jws_verify(const struct crypto_jwk *k, const void *input, size_t len,
                      const unsigned char *sig, size_t sig_len)
{
    EVP_PKEY *pkey = NULL;
    EVP_MD_CTX *md = NULL;
    unsigned char *der = NULL;
    const unsigned char *checked = sig;
    size_t checked_len = sig_len;
    int der_len = 0, rc = ERR_INVALID;

    if (k->alg == CRYPTO_JWS_RS256) {
        pkey = rsa_key(k);
        if (!pkey || sig_len != k->n_len)
            goto out; /* RFC 8017 §8.2.2: the signature is exactly as long as the modulus */
    } else if (k->alg == CRYPTO_JWS_ES256) {
        if (sig_len != 2 * CRYPTO_P256_LEN)
            goto out; /* RFC 7518 §3.4: 64 bytes, not DER */
        pkey = p256_key(k);
        der = pkey ? es256_der(sig, &der_len) : NULL;
        if (!der)
            goto out;
        checked = der;
        checked_len = (size_t)der_len;
    } else {
        goto out;
    }
    md = EVP_MD_CTX_new();
    if (!md || EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pkey) != 1)
        goto out;
    if (EVP_DigestVerify(md, checked, checked_len, input, len) == 1)
        rc = 0;
out:
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    EVP_PKEY_free(pkey);
    return rc;
}
