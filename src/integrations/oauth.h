/* SPDX-License-Identifier: MIT */
/*
 * oauth: the pieces of an OAuth 2.0 authorization-code connection with PKCE (contract §13)
 * that need no network: the sealing key, PKCE, the authorization URL, the token request
 * bodies, and the token response parser (pure, fuzzed). The exchange itself runs in
 * connect.c through httpc (connection.h).
 */
#ifndef WORKFORCE_INTEGRATIONS_OAUTH_H
#define WORKFORCE_INTEGRATIONS_OAUTH_H

#include "providers.h"

#include "../core/config.h"
#include "../core/crypto.h"
#include "../core/mem.h"
#include "../store/store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define INTEG_STATE_LEN 40             /* base62 characters of a state */
#define INTEG_VERIFIER_LEN 64          /* base62 characters of a PKCE code_verifier */
#define INTEG_CHALLENGE_LEN 43         /* base64url of a SHA-256 */
#define INTEG_STATE_TTL_MS 600000      /* a state is valid 10 minutes */
#define INTEG_TOKEN_RESPONSE_MAX 65536 /* bytes of a token response read */

/* The key that seals tokens and verifiers: HKDF-SHA256 of the server secret, so that neither
 * the key nor a usable token is ever in the database. */
int integ_key(const unsigned char *secret, size_t len, unsigned char key[CRYPTO_SEAL_KEY_LEN]);

/*
 * 'text' sealed for the tenant's 'provider' and 'what' ("tokens", "verifier"): a new buffer of
 * '*n' bytes in 'a', or NULL when sealing failed. The sealed bytes open only for the same
 * tenant, provider and purpose.
 */
unsigned char *integ_seal(const unsigned char key[CRYPTO_SEAL_KEY_LEN],
                          const struct store_tenant *t, const char *provider, const char *what,
                          const char *text, struct arena *a, size_t *n);
/* The text integ_seal() sealed, NUL-terminated in 'a', or NULL when it does not open. */
char *integ_open(const unsigned char key[CRYPTO_SEAL_KEY_LEN], const struct store_tenant *t,
                 const char *provider, const char *what, const unsigned char *in, size_t n,
                 struct arena *a);

/* A new PKCE verifier and its S256 challenge. 0 or ERR_INTERNAL. */
int integ_pkce(char verifier[INTEG_VERIFIER_LEN + 1], char challenge[INTEG_CHALLENGE_LEN + 1]);

/* The scopes of 'text' (separated by spaces or commas, as providers write them) as a new JSON
 * array of strings; the caller owns it. */
json_t *integ_scope_list(const char *text);

/*
 * Check the redirect_uri 'uri' a connect asks the user to be sent back to: an absolute http(s)
 * URL with a host and no fragment, no user name or password, no blank, control character or
 * backslash, whose origin is one of WORKFORCE_OAUTH_REDIRECT_ORIGINS. 0 with '*out' the URL with
 * its origin canonical and every byte a Location header may not carry raw percent-encoded (in
 * 'a'), or ERR_INVALID invalid_request "redirect_uri" in 'e'. Pure.
 */
int integ_redirect_uri(const struct config *c, const char *uri, struct arena *a, const char **out,
                       struct err *e);

/* OAuth's redirect_uri for 'p': {public_url}/v1/integrations/{provider}/callback ('a'). */
const char *integ_callback_url(const struct config *c, const struct integ_provider *p,
                               struct arena *a);

/* The URL to send the user to ('a'): 'scopes' space separated (joined as the provider wants). */
const char *integ_authorize_url(const struct config *c, const struct integ_provider *p,
                                const char *scopes, const char *state, const char *challenge,
                                struct arena *a);

/* The form body of the token request for 'code' ('a'). */
const char *integ_code_form(const struct config *c, const struct integ_provider *p,
                            const char *code, const char *verifier, struct arena *a);
/* The form body of a refresh ('a'). */
const char *integ_refresh_form(const struct config *c, const struct integ_provider *p,
                               const char *refresh_token, struct arena *a);

/* What a token endpoint answered. */
struct integ_token {
    const char *access_token;
    const char *refresh_token; /* NULL: none given */
    const char *scope;         /* space separated as granted; NULL: not said */
    const char *account;       /* the account's name where the answer tells it, else NULL */
    const char *account_id;    /* the account's id where the answer tells it (Slack's team.id) */
    int64_t expires_in;        /* seconds; 0: not said */
};

/*
 * Read a token endpoint's answer: HTTP 'status' and 'len' bytes of 'body'. 0 with '*out'
 * (strings in 'a'); or ERR_UPSTREAM with 'code' (an OAuth error code such as "invalid_grant",
 * or "invalid_response" for something that is not a token answer: HTML, garbage, no token) and
 * 'why' saying what it was, both cut to their sizes. Slack's {ok: false, error} is an error.
 * Pure: fuzzed by tests/fuzz/fuzz_token.c.
 */
int integ_token_parse(long status, const char *body, size_t len, struct arena *a,
                      struct integ_token *out, char *code, size_t code_n, char *why, size_t why_n);

#endif
