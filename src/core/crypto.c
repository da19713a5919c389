/* SPDX-License-Identifier: MIT */
/*
 * crypto: thin wrappers over OpenSSL 3 so that no other file includes an OpenSSL header.
 */
#include "crypto.h"

#include "err.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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
