/* SPDX-License-Identifier: MIT */
/*
 * fuzz_oidc_jwt: the readers of what a token endpoint sends (oidc/parse.c): the compact JWS
 * of an ID token (oidc_jwt_parse), its checks against a fixed JWKS (oidc_id_token_verify,
 * which reaches core/crypto.c's RS256 and ES256 checks with the input's signature bytes), and
 * the token endpoint's JSON answer (oidc_token_answer_parse). Either a reader answers 0 with
 * what it promises, or an error with a named check and nothing kept. Pure: the arena is
 * released.
 */
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/oidc/oidc.h"
#include "../unit/oidc_vectors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_oidc_jwt: check failed at line %d: %s\n", __LINE__, #c);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static struct oidc_jwks keys;
static struct arena ka;
static int ready;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct oidc_expect x = {OIDC_V_ISS, OIDC_V_AUD, OIDC_V_NONCE, OIDC_V_NOW};
    const char *tok = (const char *)data, *id_token = NULL;
    struct oidc_claims c;
    struct oidc_jwt t;
    struct arena a;
    struct err e;
    int rc;

    if (!ready) {
        arena_init(&ka);
        CHECK(oidc_jwks_parse(OIDC_V_JWKS, strlen(OIDC_V_JWKS), &ka, &keys, &e) == 0);
        ready = 1;
    }
    arena_init(&a);
    rc = oidc_jwt_parse(tok, size, &a, &t, &e);
    if (rc == 0) {
        CHECK(t.alg != NULL && t.input == tok && t.input_len < size);
        CHECK(t.claims.naud <= OIDC_AUD_MAX);
    } else {
        CHECK(rc == ERR_INVALID && t.alg == NULL && strcmp(e.param, "token") == 0);
    }
    err_clear(&e);
    rc = oidc_id_token_verify(&keys, &x, tok, size, &a, &c, &e);
    if (rc == 0) {
        /* only a token the vectors' keys signed can get here */
        CHECK(c.iss && strcmp(c.iss, OIDC_V_ISS) == 0 && c.nonce &&
              strcmp(c.nonce, OIDC_V_NONCE) == 0);
        CHECK(c.exp > OIDC_V_NOW - OIDC_SKEW_S);
    } else {
        CHECK((rc == ERR_INVALID || rc == ERR_NOT_FOUND) && e.param[0] != '\0');
        CHECK(c.iss == NULL && c.email == NULL);
    }
    rc = oidc_token_answer_parse(200, tok, size, &a, &id_token, &e);
    CHECK(rc == 0 ? id_token != NULL && strlen(id_token) <= OIDC_TOKEN_MAX
                  : rc == ERR_UPSTREAM && id_token == NULL);
    arena_cleanup(&a);
    return 0;
}
