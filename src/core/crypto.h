/* SPDX-License-Identifier: MIT */
/*
 * crypto: the only user of OpenSSL. Random bytes, HMAC-SHA256, SHA-256, constant-time
 * comparison and hex encoding; AES-GCM joins when tokens are stored (integrations).
 */
#ifndef WORKFORCE_CRYPTO_H
#define WORKFORCE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>

#define CRYPTO_SHA256_LEN 32

int crypto_random(void *out, size_t n); /* 0 or ERR_INTERNAL (CSPRNG failed) */
int crypto_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                       unsigned char out[CRYPTO_SHA256_LEN]);
void crypto_sha256(const void *msg, size_t len, unsigned char out[CRYPTO_SHA256_LEN]);
bool crypto_equal(const void *a, const void *b, size_t n); /* constant time */
/* Incremental SHA-256 (uploads are hashed as they stream). */
struct crypto_sha256;
struct crypto_sha256 *crypto_sha256_new(void); /* NULL only on OOM */
void crypto_sha256_update(struct crypto_sha256 *h, const void *p, size_t n);
void crypto_sha256_final(struct crypto_sha256 *h, unsigned char out[CRYPTO_SHA256_LEN]);
void crypto_sha256_free(struct crypto_sha256 *h);              /* NULL is a no-op */
void crypto_hex(const unsigned char *in, size_t n, char *out); /* out holds 2n+1 */

#endif
