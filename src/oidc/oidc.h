/* SPDX-License-Identifier: MIT */
/*
 * oidc: OpenID Connect sign-in (contract §20), the relying party's side of an authorization
 * code flow with PKCE. Two halves:
 *
 *   - parse.c, pure and fuzzed: the discovery document, a JWKS, a compact JWS (an ID token),
 *     the checks of an ID token (signature, iss, aud/azp, exp, iat, nbf, nonce), the token
 *     endpoint's answer, and the pieces of a flow (state, nonce, PKCE, the authorization URL,
 *     the token request). Signatures are checked by core/crypto.c (RS256 and ES256 only).
 *   - provider.c, the handle of the configured issuer: discovery and its JWKS fetched over
 *     httpc and kept; the JWKS fetched again when a token names a key it does not hold (the
 *     provider rotated its keys), such a fetch at most once every OIDC_JWKS_REFRESH_MS; the
 *     code exchanged and its ID token checked, off the request threads.
 *
 * Nothing here knows users, sessions or HTTP answers: api/oidc.c does, with the claims.
 */
#ifndef WORKFORCE_OIDC_H
#define WORKFORCE_OIDC_H

#include "../core/crypto.h"
#include "../core/err.h"
#include "../core/mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OIDC_TOKEN_MAX 16384       /* bytes of an ID token */
#define OIDC_JWKS_MAX 65536        /* bytes of a JWKS document */
#define OIDC_KEYS_MAX 32           /* keys of a JWKS */
#define OIDC_DISCOVERY_MAX 65536   /* bytes of a discovery document */
#define OIDC_ANSWER_MAX 65536      /* bytes of a token endpoint's answer */
#define OIDC_AUD_MAX 16            /* audiences of a token */
#define OIDC_SKEW_S 60             /* clock skew allowed on exp, iat and nbf */
#define OIDC_RANDOM_LEN 43         /* base64url of 32 random bytes (state, nonce, verifier) */
#define OIDC_JWKS_REFRESH_MS 10000 /* a JWKS is fetched for an unknown kid at most this often */
#define OIDC_SCOPE "openid email profile"

/* ---- Discovery (OpenID Connect Discovery 1.0 §3, §4.3) ---- */

struct oidc_discovery {
    const char *issuer;
    const char *authorization_endpoint;
    const char *token_endpoint;
    const char *jwks_uri;
};

/* Whether 'url' may be an issuer or an endpoint: https, or http to 127.0.0.1, [::1] or
 * localhost (tests and a provider on the same machine); no fragment, no user name. Pure. */
bool oidc_url_ok(const char *url);

/* The discovery document's URL for 'issuer' ("{issuer}/.well-known/openid-configuration", a
 * trailing '/' of the issuer not doubled), in 'a'. */
const char *oidc_discovery_url(const char *issuer, struct arena *a);

/*
 * Read the 'len' bytes of a discovery document fetched for the configured 'issuer': a JSON
 * object whose "issuer" is 'issuer' exactly, with the authorization, token and JWKS endpoints,
 * each oidc_url_ok(). 0 with '*out' (strings in 'a'), or ERR_INVALID with the reason in 'e'
 * (code "oidc_failed", param the member at fault). Pure: fuzzed.
 */
int oidc_discovery_parse(const char *body, size_t len, const char *issuer, struct arena *a,
                         struct oidc_discovery *out, struct err *e);

/* ---- Keys (RFC 7517) ---- */

struct oidc_key {
    const char *kid;       /* NULL when the key has none */
    struct crypto_jwk jwk; /* its bytes in the arena of the parse */
};

struct oidc_jwks {
    struct oidc_key keys[OIDC_KEYS_MAX];
    size_t n;
};

/*
 * Read the 'len' bytes of a JWKS: {"keys": [...]}, at most OIDC_JWKS_MAX bytes and
 * OIDC_KEYS_MAX keys. Only signing keys that can be checked are kept: "RSA" (RS256) and "EC"
 * on P-256 (ES256), with "use" absent or "sig" and "alg" absent or the one their type signs
 * with; others (symmetric, encryption, other curves, malformed members) are left out, so a
 * provider's new kind of key does not make the set unusable. 0 with '*out' (bytes in 'a'), or
 * ERR_INVALID in 'e': not a JWKS, too large, too many keys, or no key left. Pure: fuzzed.
 */
int oidc_jwks_parse(const char *body, size_t len, struct arena *a, struct oidc_jwks *out,
                    struct err *e);

/* ---- ID tokens (RFC 7519, OpenID Connect Core 1.0 §2, §3.1.3.7) ---- */

struct oidc_claims {
    const char *iss, *sub, *azp, *nonce; /* NULL when absent */
    const char *aud[OIDC_AUD_MAX];       /* a single string is one audience */
    size_t naud;
    int64_t exp, iat, nbf; /* seconds; 0 when absent */
    const char *email;     /* NULL when absent */
    bool email_verified;   /* true only for true (or "true", as some providers write it) */
    const char *name;      /* NULL when absent */
};

struct oidc_jwt {
    const char *alg, *kid, *typ; /* of the header; kid and typ NULL when absent */
    struct oidc_claims claims;
    const char *input; /* "header.payload", the signed bytes (in the token) */
    size_t input_len;
    unsigned char *sig; /* the signature's bytes, in 'a' */
    size_t sig_len;
};

/*
 * Read a compact JWS: three base64url parts, at most OIDC_TOKEN_MAX bytes, a header object
 * with a string "alg", a claims object whose known members have their types (numbers are
 * whole and within 0..2^53, strings hold no NUL). 0 with '*out' (strings in 'a', 'input'
 * pointing into 'tok'), or ERR_INVALID "oidc_failed" in 'e' (param "token"). Checks nothing
 * else. Pure: fuzzed.
 */
int oidc_jwt_parse(const char *tok, size_t len, struct arena *a, struct oidc_jwt *out,
                   struct err *e);

/* What a token must say. */
struct oidc_expect {
    const char *issuer;    /* "iss", exactly */
    const char *client_id; /* in "aud"; "azp" too when there are several audiences */
    const char *nonce;     /* "nonce", compared in constant time */
    int64_t now_s;         /* the time to check at */
};

/*
 * Check the ID token 'tok' ('len' bytes): parsed, its "alg" RS256 or ES256 (never "none", HS*
 * or anything else), signed by the key of its "kid" in 'keys' (without a kid: the one key of
 * that algorithm, when there is exactly one) whose algorithm is the header's, then the claims
 * of 'x': iss, aud (and azp), exp > now - skew, iat and nbf not beyond now + skew, nonce.
 * 0 with '*out' (strings in 'a'). Else, with 'e' naming the check (param "token", "alg",
 * "kid", "signature", "iss", "aud", "azp", "exp", "iat", "nbf" or "nonce"; code
 * "oidc_failed"; a message for the log, not for the user): ERR_NOT_FOUND when no key of
 * 'keys' has the token's kid (the caller may fetch the keys again), ERR_INVALID otherwise.
 * Pure and thread-safe.
 */
int oidc_id_token_verify(const struct oidc_jwks *keys, const struct oidc_expect *x, const char *tok,
                         size_t len, struct arena *a, struct oidc_claims *out, struct err *e);

/* ---- A flow: state, nonce, PKCE (RFC 7636), the authorization URL, the token request ---- */

struct oidc_flow {
    char state[OIDC_RANDOM_LEN + 1];
    char nonce[OIDC_RANDOM_LEN + 1];
    char verifier[OIDC_RANDOM_LEN + 1];  /* the PKCE code_verifier */
    char challenge[OIDC_RANDOM_LEN + 1]; /* base64url(SHA-256(verifier)) */
};

/* A new flow: state, nonce and verifier 32 random bytes each, base64url; the S256 challenge.
 * 0 or ERR_INTERNAL (no random bytes). */
int oidc_flow_new(struct oidc_flow *out);

/* The S256 challenge of 'verifier' into 'out'. */
void oidc_pkce_challenge(const char *verifier, char out[OIDC_RANDOM_LEN + 1]);

/* The URL to send the browser to ('a'): 'endpoint' with response_type=code, client_id,
 * redirect_uri, scope OIDC_SCOPE, state, nonce, code_challenge and code_challenge_method=S256,
 * percent-encoded, after a '?' or, when 'endpoint' has a query already, a '&'. */
const char *oidc_authorize_url(const char *endpoint, const char *client_id,
                               const char *redirect_uri, const struct oidc_flow *f,
                               struct arena *a);

/* The form body of the token request for 'code' ('a'): grant_type=authorization_code, code,
 * redirect_uri, code_verifier. */
const char *oidc_code_form(const char *code, const char *redirect_uri, const char *verifier,
                           struct arena *a);

/* "Authorization: Basic ..." of client_secret_basic (RFC 6749 §2.3.1: id and secret
 * form-urlencoded, then base64), in 'a'. */
const char *oidc_basic_auth(const char *client_id, const char *secret, struct arena *a);

/*
 * Read the token endpoint's answer: HTTP 'status' and 'len' bytes of 'body'. 0 with '*id_token'
 * (in 'a', at most OIDC_TOKEN_MAX bytes), or ERR_UPSTREAM "oidc_failed" in 'e' with the reason:
 * an error status (with the OAuth error code when the body has one), not JSON, no id_token.
 * Pure: fuzzed with the tokens.
 */
int oidc_token_answer_parse(long status, const char *body, size_t len, struct arena *a,
                            const char **id_token, struct err *e);

/* Whether 'email' (one '@', a non-empty local part) has a domain of 'allowed' (domains
 * separated by commas, lower case, as WORKFORCE_OIDC_ALLOWED_DOMAINS is kept): the whole
 * domain, compared without regard to ASCII case; a subdomain is not its parent. "" allows
 * nothing. Pure. */
bool oidc_email_domain_allowed(const char *email, const char *allowed);

/* ---- The provider (provider.c) ---- */

struct httpc;
struct oidc;

struct oidc_settings {
    const char *issuer; /* WORKFORCE_OIDC_ISSUER */
    const char *client_id;
    const char *client_secret;
    long connect_timeout_ms; /* 0: 5 s */
    long timeout_ms;         /* one request to the provider; 0: 10 s */
};

/* A handle on the provider of 's' (copied) that fetches over 'h' (borrowed: it must outlive
 * the handle). Nothing is fetched yet. 0 with '*out' (free with oidc_free()), or ERR_INVALID
 * in 'e' when the issuer is not oidc_url_ok() or the client id or secret is empty. */
int oidc_new(struct httpc *h, const struct oidc_settings *s, struct oidc **out, struct err *e);
/* Free 'o'; no call may be under way. NULL is a no-op. */
void oidc_free(struct oidc *o);

/* The URL to send the browser to (valid during the call only), or the failure ('rc' not 0,
 * 'url' NULL, 'e' saying why, for the log). */
typedef void (*oidc_url_fn)(void *ud, int rc, const char *url, const struct err *e);
/* The claims of a checked ID token (valid during the call only), or the failure ('rc' not 0,
 * 'c' NULL, 'e' naming the check that failed, for the log). */
typedef void (*oidc_claims_fn)(void *ud, int rc, const struct oidc_claims *c, const struct err *e);

/*
 * The authorization URL of flow 'f' for 'redirect_uri', told to 'done' exactly once: at once
 * on the caller's thread when the discovery document is held, else from httpc's thread once
 * it is fetched (ERR_UPSTREAM when it cannot be).
 */
void oidc_authorize(struct oidc *o, const struct oidc_flow *f, const char *redirect_uri,
                    oidc_url_fn done, void *ud);

/*
 * Exchange 'code' (with 'redirect_uri' and the PKCE 'verifier') at the token endpoint, and
 * check the ID token it answers against the issuer, the client id and 'nonce' at the time
 * the answer arrives; the JWKS is fetched when none is held, and again (once, rate-limited)
 * when the token's kid is not in it. 'done' is told exactly once, from httpc's thread or,
 * when nothing could be sent, the caller's: the claims, or ERR_UPSTREAM (the provider could
 * not be reached or refused the code), ERR_INVALID (the token failed a check; 'e->param'
 * names which) or ERR_NOT_FOUND (no key for its kid, after a fetch).
 */
void oidc_sign_in(struct oidc *o, const char *code, const char *redirect_uri, const char *verifier,
                  const char *nonce, oidc_claims_fn done, void *ud);

/* Counters for tests and the log: documents fetched since oidc_new(). */
struct oidc_stats {
    unsigned discovery_fetches, jwks_fetches, exchanges;
};
void oidc_stats_get(struct oidc *o, struct oidc_stats *out);

#endif
