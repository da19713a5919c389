/* SPDX-License-Identifier: MIT */
/*
 * fuzz_oidc_jwks: the readers of a provider's published documents (oidc/parse.c): a JWKS
 * (oidc_jwks_parse) and a discovery document (oidc_discovery_parse). Every key a JWKS keeps is
 * then handed to core/crypto.c's crypto_jws_verify() with a signature of the right length,
 * so that OpenSSL builds a key from the input's own n, e, x and y (the point checked to be on
 * the curve); nothing may verify. Pure: the arena is released.
 */
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/oidc/oidc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_oidc_jwks: check failed at line %d: %s\n", __LINE__, #c);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char sig[CRYPTO_RSA_N_MAX];
    const char *body = (const char *)data;
    struct oidc_jwks *keys = malloc(sizeof(*keys));
    struct oidc_discovery d;
    struct arena a;
    struct err e;
    int rc;

    arena_init(&a);
    rc = oidc_jwks_parse(body, size, &a, keys, &e);
    if (rc == 0) {
        CHECK(keys->n >= 1 && keys->n <= OIDC_KEYS_MAX);
        for (size_t i = 0; i < keys->n; i++) {
            const struct crypto_jwk *k = &keys->keys[i].jwk;
            size_t n = k->alg == CRYPTO_JWS_RS256 ? k->n_len : 2 * CRYPTO_P256_LEN;
            CHECK(k->alg == CRYPTO_JWS_RS256 || k->alg == CRYPTO_JWS_ES256);
            CHECK(n <= sizeof(sig));
            CHECK(crypto_jws_verify(k, "e30.e30", 7, sig, n) == ERR_INVALID);
        }
    } else {
        CHECK(rc == ERR_INVALID && keys->n == 0);
    }
    rc = oidc_discovery_parse(body, size, "https://id.example.com", &a, &d, &e);
    if (rc == 0)
        CHECK(strcmp(d.issuer, "https://id.example.com") == 0 && oidc_url_ok(d.jwks_uri) &&
              oidc_url_ok(d.token_endpoint) && oidc_url_ok(d.authorization_endpoint));
    else
        CHECK(rc == ERR_INVALID && d.issuer == NULL);
    free(keys);
    arena_cleanup(&a);
    return 0;
}
