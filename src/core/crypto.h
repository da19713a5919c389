/* SPDX-License-Identifier: MIT */
/*
 * crypto: the only user of OpenSSL. Random bytes, HMAC-SHA256, SHA-256, HKDF, AES-256-GCM
 * sealing (integration tokens at rest), constant-time comparison, hex encoding, and the
 * secrets and signatures of Standard Webhooks, and JWS signature checks (OpenID Connect).
 */
#ifndef WORKFORCE_CRYPTO_H
#define WORKFORCE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTO_SHA256_LEN 32

int crypto_random(void *out, size_t n); /* 0 or ERR_INTERNAL (CSPRNG failed) */
int crypto_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                       unsigned char out[CRYPTO_SHA256_LEN]);
/* A keyed HMAC-SHA256 for many messages under one key (API keys under the server secret). */
struct crypto_hmac;
struct crypto_hmac *crypto_hmac_new(const void *key, size_t keylen); /* NULL on failure */
int crypto_hmac_sign(const struct crypto_hmac *h, const void *msg, size_t len,
                     unsigned char out[CRYPTO_SHA256_LEN]); /* 0 or ERR_INTERNAL; thread-safe */
void crypto_hmac_free(struct crypto_hmac *h);               /* NULL is a no-op */
void crypto_sha256(const void *msg, size_t len, unsigned char out[CRYPTO_SHA256_LEN]);
bool crypto_equal(const void *a, const void *b, size_t n); /* constant time */
/* Incremental SHA-256 (uploads are hashed as they stream). */
struct crypto_sha256;
struct crypto_sha256 *crypto_sha256_new(void); /* NULL only on OOM */
void crypto_sha256_update(struct crypto_sha256 *h, const void *p, size_t n);
void crypto_sha256_final(struct crypto_sha256 *h, unsigned char out[CRYPTO_SHA256_LEN]);
void crypto_sha256_free(struct crypto_sha256 *h);              /* NULL is a no-op */
void crypto_hex(const unsigned char *in, size_t n, char *out); /* out holds 2n+1 */
/* Base64 with padding (RFC 4648 §4); 'out' holds 4 * ((n + 2) / 3) + 1 bytes. */
void crypto_base64(const unsigned char *in, size_t n, char *out);
/* Base64url without padding (RFC 4648 §5); 'out' holds (4n + 2) / 3 + 1 bytes. */
void crypto_base64url(const unsigned char *in, size_t n, char *out);

/* HKDF-SHA256 (RFC 5869): 'n' bytes (1 to 8160) derived from 'ikm' with 'salt' and 'info'
 * (at most 255 bytes) into 'out'. 0 or ERR_INTERNAL. */
int crypto_hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
                       const void *info, size_t info_len, void *out, size_t n);

/* ---- AES-256-GCM sealing ---- */

#define CRYPTO_SEAL_KEY_LEN 32
#define CRYPTO_SEAL_NONCE_LEN 12
#define CRYPTO_SEAL_TAG_LEN 16
#define CRYPTO_SEAL_OVERHEAD (CRYPTO_SEAL_NONCE_LEN + CRYPTO_SEAL_TAG_LEN)

/* Encrypt the 'n' bytes of 'in' under 'key' with a fresh random nonce, authenticating 'aad'
 * too (what the plaintext belongs to): 'out' (n + CRYPTO_SEAL_OVERHEAD bytes) gets nonce,
 * ciphertext and tag. 0 or ERR_INTERNAL. */
int crypto_seal(const unsigned char key[CRYPTO_SEAL_KEY_LEN], const void *aad, size_t aad_len,
                const void *in, size_t n, unsigned char *out);

/* Open what crypto_seal() made ('n' bytes): the plaintext (n - CRYPTO_SEAL_OVERHEAD bytes) in
 * 'out'. ERR_INVALID when it is too short or was altered, or the key or 'aad' differ. */
int crypto_open(const unsigned char key[CRYPTO_SEAL_KEY_LEN], const void *aad, size_t aad_len,
                const unsigned char *in, size_t n, void *out);

/* ---- Standard Webhooks (HMAC-SHA256 "v1" signatures, "whsec_" secrets) ---- */

#define CRYPTO_WHSEC_KEY_LEN 24 /* bytes of a new secret */
#define CRYPTO_WHSEC_KEY_MIN 24 /* the specification's range for a decoded secret */
#define CRYPTO_WHSEC_KEY_MAX 64
#define CRYPTO_WHSEC_STR_LEN 39 /* "whsec_" + 32 base64 characters + NUL */
#define CRYPTO_WHSIG_LEN 48     /* "v1," + 44 base64 characters + NUL */

/* A new secret "whsec_" + base64 of 24 random bytes into 'out'. 0 or ERR_INTERNAL. */
int crypto_whsec_new(char out[CRYPTO_WHSEC_STR_LEN]);
/* The key bytes of the 'len' bytes of secret 's' ("whsec_" + base64) into 'out', their number
 * into '*out_len'. 0, or ERR_INVALID when malformed or not 24 to 64 bytes. Pure. */
int crypto_whsec_decode(const char *s, size_t len, unsigned char out[CRYPTO_WHSEC_KEY_MAX],
                        size_t *out_len);
/* The signature "v1,<base64 HMAC-SHA256 of 'msg_id'.'ts'.'body'>" under 'secret' (its 'len'
 * bytes, "whsec_..."), NUL-terminated into 'out'. 0, ERR_INVALID (secret malformed, 'msg_id'
 * empty or holding a '.' or a byte outside printable ASCII) or ERR_INTERNAL. Thread-safe. */
int crypto_whsec_sign(const char *secret, size_t len, const char *msg_id, int64_t ts,
                      const void *body, size_t body_len, char out[CRYPTO_WHSIG_LEN]);

/* ---- JWS signatures (RFC 7515, 7518): the public keys of a JWK ---- */

/* The only algorithms a signature is checked with; everything else ("none", HS*, PS*, ...)
 * is refused before a key is looked at. */
enum crypto_jws_alg {
    CRYPTO_JWS_RS256 = 1, /* RSASSA-PKCS1-v1_5 with SHA-256 */
    CRYPTO_JWS_ES256      /* ECDSA P-256 with SHA-256, the signature raw r || s */
};

#define CRYPTO_RSA_N_MIN 256  /* bytes of a modulus: 2048 bits at least */
#define CRYPTO_RSA_N_MAX 1024 /* 8192 bits at most */
#define CRYPTO_RSA_E_MAX 8
#define CRYPTO_P256_LEN 32 /* bytes of a P-256 coordinate, and of r and of s */

/* A public key as a JWK carries it, in bytes (big-endian, base64url-decoded); the caller's. */
struct crypto_jwk {
    enum crypto_jws_alg alg; /* what the key is for: RS256 (n, e) or ES256 (x, y) */
    const unsigned char *n, *e;
    size_t n_len, e_len;
    const unsigned char *x, *y; /* CRYPTO_P256_LEN bytes each */
};

/*
 * Check the JWS signature 'sig' ('sig_len' bytes as the token carries it, decoded) of the
 * 'len' bytes 'input' ("header.payload" as sent) with key 'k', under 'k->alg'. 0 when it
 * verifies; ERR_INVALID when it does not, or the key is malformed (a modulus under 2048 bits,
 * a point not on the curve, a signature of the wrong length). Thread-safe; no state kept.
 */
int crypto_jws_verify(const struct crypto_jwk *k, const void *input, size_t len,
                      const unsigned char *sig, size_t sig_len);

/* Decode the 'len' bytes of base64url 's' (no padding; RFC 7515 §2) into 'out' (room for
 * 'cap'), the count into '*out_len'. 0, or ERR_INVALID for a character outside the alphabet,
 * '=', a length no encoding has, left-over bits set, or more than 'cap' bytes. Pure. */
int crypto_base64url_decode(const char *s, size_t len, unsigned char *out, size_t cap,
                            size_t *out_len);

#endif
