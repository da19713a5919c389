/* SPDX-License-Identifier: MIT */
/*
 * parse.c: the pure half of OpenID Connect sign-in (see oidc.h). Everything here reads bytes
 * a provider (or an attacker in its place) sent: the discovery document, the JWKS, the ID
 * token and the token endpoint's answer. Each reader caps its input before parsing, keeps
 * nothing but what it returns in the caller's arena, and does no I/O, so tests/fuzz/ can call
 * it with anything.
 *
 * DESIGN. An ID token is checked in the order that leaks least and refuses earliest: its shape,
 * then the algorithm (RS256 or ES256 only, so "none" and HMAC under a public key never reach
 * a key), then the key (by kid, and the key's own algorithm must be the header's), then the
 * signature, and only then the claims, which are not trusted before it. A kid that no key has
 * is its own answer (ERR_NOT_FOUND) so the provider handle can fetch the keys again.
 */
#include "oidc.h"

#include "../core/buf.h"
#include "../core/crypto.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define FAILED "oidc_failed"
#define NUM_MAX 9007199254740992LL /* 2^53: a JSON number every parser reads alike */

/* ---- Helpers ---- */

/* The string member 'name' of object 'o' copied into 'a'; NULL when absent or not a string
 * (or holding a NUL, which jansson refuses unless asked). */
static const char *str_of(json_t *o, const char *name, struct arena *a)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_string(v))
        return NULL;
    return arena_strndup(a, json_string_value(v), json_string_length(v));
}

/* The parsed JSON object of 'len' bytes at 'p', or NULL. The caller decrefs it. */
static json_t *object_of(const char *p, size_t len)
{
    json_error_t jerr;
    json_t *v = json_loadb(p, len, JSON_REJECT_DUPLICATES, &jerr);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

/* Whether 'host' (its 'len' bytes) is this machine by name or loopback address. */
static bool local_host(const char *host, size_t len)
{
    static const char *const names[] = {"127.0.0.1", "[::1]", "localhost"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (len == strlen(names[i]) && strncmp(host, names[i], len) == 0)
            return true;
    }
    return false;
}

/* See oidc.h. */
bool oidc_url_ok(const char *url)
{
    const char *host, *end;
    size_t hlen;

    if (!url)
        return false;
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '#' || *p == '\\')
            return false;
    }
    if (strncmp(url, "https://", 8) == 0)
        host = url + 8;
    else if (strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else
        return false;
    end = host + strcspn(host, "/?");
    if (memchr(host, '@', (size_t)(end - host)))
        return false; /* user info */
    hlen = (size_t)(end - host);
    if (host[0] == '[') {
        const char *close = memchr(host, ']', hlen);
        hlen = close ? (size_t)(close - host) + 1 : 0;
    } else {
        const char *colon = memchr(host, ':', hlen);
        if (colon)
            hlen = (size_t)(colon - host);
    }
    if (hlen == 0)
        return false;
    return url[4] == 's' || local_host(host, hlen);
}

/* ---- Discovery ---- */

/* See oidc.h. */
const char *oidc_discovery_url(const char *issuer, struct arena *a)
{
    size_t n = strlen(issuer);
    if (n > 0 && issuer[n - 1] == '/')
        n--;
    return arena_printf(a, "%.*s/.well-known/openid-configuration", (int)n, issuer);
}

/* See oidc.h. */
int oidc_discovery_parse(const char *body, size_t len, const char *issuer, struct arena *a,
                         struct oidc_discovery *out, struct err *e)
{
    static const char *const members[] = {"authorization_endpoint", "token_endpoint", "jwks_uri"};
    const char *got[3];
    json_t *o = NULL;
    int rc = ERR_INVALID;

    memset(out, 0, sizeof(*out));
    if (len > OIDC_DISCOVERY_MAX) {
        err_set(e, ERR_INVALID, FAILED, "discovery", "the discovery document is over %d bytes",
                OIDC_DISCOVERY_MAX);
        goto out;
    }
    o = object_of(body, len);
    if (!o) {
        err_set(e, ERR_INVALID, FAILED, "discovery", "the discovery document is not a JSON object");
        goto out;
    }
    out->issuer = str_of(o, "issuer", a);
    if (!out->issuer || strcmp(out->issuer, issuer) != 0) {
        err_set(e, ERR_INVALID, FAILED, "issuer",
                "the discovery document's issuer is not the configured one");
        goto out;
    }
    for (size_t i = 0; i < 3; i++) {
        got[i] = str_of(o, members[i], a);
        if (!oidc_url_ok(got[i])) {
            err_set(e, ERR_INVALID, FAILED, members[i],
                    "the discovery document's %s is missing or not an https URL", members[i]);
            goto out;
        }
    }
    out->authorization_endpoint = got[0];
    out->token_endpoint = got[1];
    out->jwks_uri = got[2];
    rc = 0;
out:
    json_decref(o);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* ---- Keys ---- */

/* The base64url member 'name' of 'o' decoded into 'a', its length into '*n'; NULL when absent,
 * not a string, malformed or over 'cap' bytes. */
static unsigned char *bytes_of(json_t *o, const char *name, size_t cap, struct arena *a, size_t *n)
{
    json_t *v = json_object_get(o, name);
    unsigned char *out;

    if (!json_is_string(v) || json_string_length(v) > (cap * 4 + 2) / 3)
        return NULL;
    out = arena_alloc(a, cap);
    if (crypto_base64url_decode(json_string_value(v), json_string_length(v), out, cap, n))
        return NULL;
    return out;
}

/* Whether member 'name' of 'o' is absent or the string 'want'. */
static bool absent_or(json_t *o, const char *name, const char *want)
{
    json_t *v = json_object_get(o, name);
    return !v || (json_is_string(v) && strcmp(json_string_value(v), want) == 0);
}

/* Read one JWK 'k' into '*out' when it is a signing key we can check; false otherwise. */
static bool key_of(json_t *k, struct arena *a, struct oidc_key *out)
{
    const char *kty = str_of(k, "kty", a);
    json_t *kid = json_object_get(k, "kid");
    struct crypto_jwk *j = &out->jwk;
    size_t xn = 0, yn = 0;

    memset(out, 0, sizeof(*out));
    if (!kty || !absent_or(k, "use", "sig"))
        return false;
    if (kid && !json_is_string(kid))
        return false;
    out->kid = kid ? arena_strndup(a, json_string_value(kid), json_string_length(kid)) : NULL;
    if (strcmp(kty, "RSA") == 0 && absent_or(k, "alg", "RS256")) {
        j->alg = CRYPTO_JWS_RS256;
        j->n = bytes_of(k, "n", CRYPTO_RSA_N_MAX, a, &j->n_len);
        j->e = bytes_of(k, "e", CRYPTO_RSA_E_MAX, a, &j->e_len);
        return j->n && j->e && j->n_len >= CRYPTO_RSA_N_MIN && j->n[0] != 0 && j->e_len > 0;
    }
    if (strcmp(kty, "EC") == 0 && absent_or(k, "alg", "ES256") && absent_or(k, "crv", "P-256") &&
        json_object_get(k, "crv")) {
        j->alg = CRYPTO_JWS_ES256;
        j->x = bytes_of(k, "x", CRYPTO_P256_LEN, a, &xn);
        j->y = bytes_of(k, "y", CRYPTO_P256_LEN, a, &yn);
        return j->x && j->y && xn == CRYPTO_P256_LEN && yn == CRYPTO_P256_LEN;
    }
    return false; /* "oct", "OKP", other curves and algorithms: never used to check */
}

/* See oidc.h. */
int oidc_jwks_parse(const char *body, size_t len, struct arena *a, struct oidc_jwks *out,
                    struct err *e)
{
    json_t *o = NULL, *keys;
    int rc = ERR_INVALID;

    out->n = 0;
    if (len > OIDC_JWKS_MAX) {
        err_set(e, ERR_INVALID, FAILED, "jwks", "the JWKS is over %d bytes", OIDC_JWKS_MAX);
        goto out;
    }
    o = object_of(body, len);
    keys = o ? json_object_get(o, "keys") : NULL;
    if (!json_is_array(keys)) {
        err_set(e, ERR_INVALID, FAILED, "jwks", "the JWKS is not an object with a keys array");
        goto out;
    }
    if (json_array_size(keys) > OIDC_KEYS_MAX) {
        err_set(e, ERR_INVALID, FAILED, "jwks", "the JWKS has over %d keys", OIDC_KEYS_MAX);
        goto out;
    }
    for (size_t i = 0; i < json_array_size(keys); i++) {
        json_t *k = json_array_get(keys, i);
        if (json_is_object(k) && key_of(k, a, &out->keys[out->n]))
            out->n++;
    }
    if (out->n == 0) {
        err_set(e, ERR_INVALID, FAILED, "jwks", "the JWKS has no RS256 or ES256 signing key");
        goto out;
    }
    rc = 0;
out:
    json_decref(o);
    if (rc)
        out->n = 0;
    return rc;
}

/* ---- Tokens ---- */

/* The object in the 'len' base64url bytes at 'p', or NULL. The caller decrefs it. */
static json_t *part_object(const char *p, size_t len, struct arena *a)
{
    size_t cap = len * 3 / 4 + 3, n = 0;
    unsigned char *raw = arena_alloc(a, cap);
    if (crypto_base64url_decode(p, len, raw, cap, &n))
        return NULL;
    return object_of((const char *)raw, n);
}

/* The whole-number member 'name' of 'o' into '*out' (0 when absent). False when present and
 * not a whole number from 0 to 2^53. */
static bool num_of(json_t *o, const char *name, int64_t *out)
{
    json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > NUM_MAX)
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

/* Whether member 'name' of 'o' is absent or a string. */
static bool str_or_absent(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return !v || json_is_string(v);
}

/* The audiences of 'aud' (a string or an array of strings) into 'c'. */
static bool aud_of(json_t *aud, struct arena *a, struct oidc_claims *c)
{
    if (!aud)
        return true;
    if (json_is_string(aud)) {
        c->aud[c->naud++] = arena_strndup(a, json_string_value(aud), json_string_length(aud));
        return true;
    }
    if (!json_is_array(aud) || json_array_size(aud) > OIDC_AUD_MAX)
        return false;
    for (size_t i = 0; i < json_array_size(aud); i++) {
        json_t *v = json_array_get(aud, i);
        if (!json_is_string(v))
            return false;
        c->aud[c->naud++] = arena_strndup(a, json_string_value(v), json_string_length(v));
    }
    return true;
}

/* Read the claims object 'o' into 'c'; false when a known member has the wrong type. */
static bool claims_of(json_t *o, struct arena *a, struct oidc_claims *c)
{
    static const char *const strings[] = {"iss", "sub", "azp", "nonce", "email", "name"};
    json_t *ev = json_object_get(o, "email_verified");

    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        if (!str_or_absent(o, strings[i]))
            return false;
    }
    if (!num_of(o, "exp", &c->exp) || !num_of(o, "iat", &c->iat) || !num_of(o, "nbf", &c->nbf))
        return false;
    if (!aud_of(json_object_get(o, "aud"), a, c))
        return false;
    c->iss = str_of(o, "iss", a);
    c->sub = str_of(o, "sub", a);
    c->azp = str_of(o, "azp", a);
    c->nonce = str_of(o, "nonce", a);
    c->email = str_of(o, "email", a);
    c->name = str_of(o, "name", a);
    c->email_verified =
        json_is_true(ev) || (json_is_string(ev) && strcmp(json_string_value(ev), "true") == 0);
    /* Microsoft Entra ID never states email_verified for an organization's accounts; its
     * optional claim xms_edov (the email's domain is verified by the tenant that owns it)
     * stands in for it, only when email_verified is absent. */
    if (!ev && json_is_true(json_object_get(o, "xms_edov")))
        c->email_verified = true;
    return true;
}

/* See oidc.h. */
int oidc_jwt_parse(const char *tok, size_t len, struct arena *a, struct oidc_jwt *out,
                   struct err *e)
{
    const char *dot1, *dot2, *end = tok + len;
    json_t *h = NULL, *c = NULL;
    size_t cap;
    int rc = ERR_INVALID;

    memset(out, 0, sizeof(*out));
    if (len > OIDC_TOKEN_MAX) {
        err_set(e, ERR_INVALID, FAILED, "token", "the ID token is over %d bytes", OIDC_TOKEN_MAX);
        goto out;
    }
    dot1 = memchr(tok, '.', len);
    dot2 = dot1 ? memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1)) : NULL;
    if (!dot2 || memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1))) {
        err_set(e, ERR_INVALID, FAILED, "token", "the ID token is not three parts (a JWS)");
        goto out;
    }
    h = part_object(tok, (size_t)(dot1 - tok), a);
    c = part_object(dot1 + 1, (size_t)(dot2 - dot1 - 1), a);
    if (!h || !c) {
        err_set(e, ERR_INVALID, FAILED, "token", "a part of the ID token is not a JSON object");
        goto out;
    }
    out->alg = str_of(h, "alg", a);
    if (!out->alg || !str_or_absent(h, "kid") || !str_or_absent(h, "typ") ||
        json_object_get(h, "crit")) {
        err_set(e, ERR_INVALID, FAILED, "token",
                "the ID token's header has no alg, a kid or typ that is not a string, or crit");
        goto out;
    }
    out->kid = str_of(h, "kid", a);
    out->typ = str_of(h, "typ", a);
    if (!claims_of(c, a, &out->claims)) {
        err_set(e, ERR_INVALID, FAILED, "token", "a claim of the ID token has the wrong type");
        goto out;
    }
    cap = (size_t)(end - dot2 - 1) * 3 / 4 + 3;
    out->sig = arena_alloc(a, cap);
    if (crypto_base64url_decode(dot2 + 1, (size_t)(end - dot2 - 1), out->sig, cap, &out->sig_len)) {
        err_set(e, ERR_INVALID, FAILED, "token", "the ID token's signature is not base64url");
        goto out;
    }
    out->input = tok;
    out->input_len = (size_t)(dot2 - tok);
    rc = 0;
out:
    json_decref(h);
    json_decref(c);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* ---- The checks of an ID token ---- */

/* The algorithm named 'alg', or 0 when it is not one we check signatures with. */
static enum crypto_jws_alg alg_of(const char *alg)
{
    if (strcmp(alg, "RS256") == 0)
        return CRYPTO_JWS_RS256;
    if (strcmp(alg, "ES256") == 0)
        return CRYPTO_JWS_ES256;
    return 0;
}

/* The key of 'keys' that checks token 't' with algorithm 'alg' into '*out'. ERR_NOT_FOUND when
 * no key has its kid (or, without a kid, not exactly one key signs with 'alg'); ERR_INVALID
 * when the key with its kid signs with another algorithm. */
static int key_for(const struct oidc_jwks *keys, const struct oidc_jwt *t, enum crypto_jws_alg alg,
                   const struct oidc_key **out, struct err *e)
{
    const struct oidc_key *found = NULL;
    size_t matches = 0;

    for (size_t i = 0; i < keys->n; i++) {
        const struct oidc_key *k = &keys->keys[i];
        if (t->kid && k->kid && strcmp(k->kid, t->kid) == 0) {
            found = k;
            matches = 1;
            break; /* the first key of a kid */
        }
        if (!t->kid && k->jwk.alg == alg) {
            found = k;
            matches++;
        }
    }
    if (matches != 1)
        return err_set(e, ERR_NOT_FOUND, FAILED, "kid",
                       t->kid ? "no key of the provider has the ID token's kid"
                              : "the ID token has no kid and the provider has not one key for "
                                "its alg");
    if (found->jwk.alg != alg)
        return err_set(e, ERR_INVALID, FAILED, "alg",
                       "the key of the ID token's kid signs with another algorithm");
    *out = found;
    return 0;
}

/* Whether 'c' names 'client_id' as its audience, and as its authorized party when it has
 * several audiences (OpenID Connect Core §3.1.3.7, items 3 to 5). */
static int aud_check(const struct oidc_claims *c, const char *client_id, struct err *e)
{
    bool in = false;
    for (size_t i = 0; i < c->naud; i++)
        in = in || strcmp(c->aud[i], client_id) == 0;
    if (!in)
        return err_set(e, ERR_INVALID, FAILED, "aud", "the ID token is not for this client");
    if ((c->naud > 1 || c->azp) && (!c->azp || strcmp(c->azp, client_id) != 0))
        return err_set(e, ERR_INVALID, FAILED, "azp",
                       "the ID token has several audiences and this client is not its azp");
    return 0;
}

/* The time claims of 'c' at 'now' with OIDC_SKEW_S either way. */
static int time_check(const struct oidc_claims *c, int64_t now, struct err *e)
{
    if (c->exp == 0 || c->exp <= now - OIDC_SKEW_S)
        return err_set(e, ERR_INVALID, FAILED, "exp", "the ID token has expired (or has no exp)");
    if (c->iat > now + OIDC_SKEW_S)
        return err_set(e, ERR_INVALID, FAILED, "iat", "the ID token was issued in the future");
    if (c->nbf > now + OIDC_SKEW_S)
        return err_set(e, ERR_INVALID, FAILED, "nbf", "the ID token is not valid yet");
    return 0;
}

/* Whether nonce 'got' (NULL: absent) is 'want', in time independent of where they differ. */
static bool nonce_ok(const char *got, const char *want)
{
    size_t n = strlen(want);
    if (!got || n == 0 || strlen(got) != n)
        return false;
    return crypto_equal(got, want, n);
}

/* See oidc.h. */
int oidc_id_token_verify(const struct oidc_jwks *keys, const struct oidc_expect *x, const char *tok,
                         size_t len, struct arena *a, struct oidc_claims *out, struct err *e)
{
    const struct oidc_key *k = NULL;
    enum crypto_jws_alg alg;
    struct oidc_jwt t;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = oidc_jwt_parse(tok, len, a, &t, e);
    if (rc)
        return rc;
    alg = alg_of(t.alg);
    if (!alg)
        return err_set(e, ERR_INVALID, FAILED, "alg",
                       "the ID token's alg is not RS256 or ES256 (none and HMAC are refused)");
    rc = key_for(keys, &t, alg, &k, e);
    if (rc)
        return rc;
    if (crypto_jws_verify(&k->jwk, t.input, t.input_len, t.sig, t.sig_len))
        return err_set(e, ERR_INVALID, FAILED, "signature",
                       "the ID token's signature does not verify with the provider's key");
    if (!t.claims.iss || strcmp(t.claims.iss, x->issuer) != 0)
        return err_set(e, ERR_INVALID, FAILED, "iss", "the ID token's iss is not the issuer");
    rc = aud_check(&t.claims, x->client_id, e);
    if (!rc)
        rc = time_check(&t.claims, x->now_s, e);
    if (rc)
        return rc;
    if (!nonce_ok(t.claims.nonce, x->nonce))
        return err_set(e, ERR_INVALID, FAILED, "nonce", "the ID token's nonce is not the flow's");
    *out = t.claims;
    return 0;
}

/* ---- A flow ---- */

/* See oidc.h. */
void oidc_pkce_challenge(const char *verifier, char out[OIDC_RANDOM_LEN + 1])
{
    unsigned char h[CRYPTO_SHA256_LEN];
    crypto_sha256(verifier, strlen(verifier), h);
    crypto_base64url(h, sizeof(h), out);
}

/* See oidc.h. */
int oidc_flow_new(struct oidc_flow *out)
{
    unsigned char r[3][32];
    if (crypto_random(r, sizeof(r)))
        return ERR_INTERNAL;
    crypto_base64url(r[0], 32, out->state);
    crypto_base64url(r[1], 32, out->nonce);
    crypto_base64url(r[2], 32, out->verifier);
    oidc_pkce_challenge(out->verifier, out->challenge);
    memset(r, 0, sizeof(r));
    return 0;
}

/* Append "name=value" percent-encoded, after 'sep' ("" for the first). */
static void param(struct buf *b, const char *sep, const char *name, const char *value)
{
    buf_appendf(b, "%s%s=", sep, name);
    buf_append_urlenc(b, value);
}

/* See oidc.h. */
const char *oidc_authorize_url(const char *endpoint, const char *client_id,
                               const char *redirect_uri, const struct oidc_flow *f, struct arena *a)
{
    const char *url;
    struct buf b;

    buf_init(&b, 64 * 1024);
    buf_appends(&b, endpoint);
    param(&b, strchr(endpoint, '?') ? "&" : "?", "response_type", "code");
    param(&b, "&", "client_id", client_id);
    param(&b, "&", "redirect_uri", redirect_uri);
    param(&b, "&", "scope", OIDC_SCOPE);
    param(&b, "&", "state", f->state);
    param(&b, "&", "nonce", f->nonce);
    param(&b, "&", "code_challenge", f->challenge);
    param(&b, "&", "code_challenge_method", "S256");
    url = arena_strdup(a, buf_ptr(&b));
    buf_cleanup(&b);
    return url;
}

/* See oidc.h. */
const char *oidc_code_form(const char *code, const char *redirect_uri, const char *verifier,
                           struct arena *a)
{
    const char *form;
    struct buf b;

    buf_init(&b, 64 * 1024);
    param(&b, "", "grant_type", "authorization_code");
    param(&b, "&", "code", code);
    param(&b, "&", "redirect_uri", redirect_uri);
    param(&b, "&", "code_verifier", verifier);
    form = arena_strdup(a, buf_ptr(&b));
    buf_cleanup(&b);
    return form;
}

/* See oidc.h. */
const char *oidc_basic_auth(const char *client_id, const char *secret, struct arena *a)
{
    struct buf b;
    char *out;
    size_t n;

    buf_init(&b, 16 * 1024);
    buf_append_urlenc(&b, client_id);
    buf_appends(&b, ":");
    buf_append_urlenc(&b, secret);
    n = buf_len(&b);
    out = arena_alloc(a, 21 + 4 * ((n + 2) / 3) + 1);
    memcpy(out, "Authorization: Basic ", 21);
    crypto_base64((const unsigned char *)buf_ptr(&b), n, out + 21);
    buf_cleanup(&b);
    return out;
}

/* See oidc.h. */
int oidc_token_answer_parse(long status, const char *body, size_t len, struct arena *a,
                            const char **id_token, struct err *e)
{
    json_t *o = len <= OIDC_ANSWER_MAX ? object_of(body, len) : NULL;
    json_t *error = o ? json_object_get(o, "error") : NULL;
    json_t *tok = o ? json_object_get(o, "id_token") : NULL;
    int rc = ERR_UPSTREAM;

    *id_token = NULL;
    if (status < 200 || status > 299) {
        err_set(e, ERR_UPSTREAM, FAILED, "code", "the token endpoint answered HTTP %ld (%.64s)",
                status, json_is_string(error) ? json_string_value(error) : "no OAuth error");
        goto out;
    }
    if (!o) {
        err_set(e, ERR_UPSTREAM, FAILED, "code", "the token endpoint's answer is not JSON");
        goto out;
    }
    if (!json_is_string(tok) || json_string_length(tok) == 0 ||
        json_string_length(tok) > OIDC_TOKEN_MAX) {
        err_set(e, ERR_UPSTREAM, FAILED, "id_token",
                "the token endpoint's answer has no id_token (or one over %d bytes)",
                OIDC_TOKEN_MAX);
        goto out;
    }
    *id_token = arena_strndup(a, json_string_value(tok), json_string_length(tok));
    rc = 0;
out:
    json_decref(o);
    return rc;
}

/* See oidc.h. */
bool oidc_email_domain_allowed(const char *email, const char *allowed)
{
    const char *at = email ? strchr(email, '@') : NULL;
    const char *domain;
    size_t n;

    if (!at || at == email || strchr(at + 1, '@') || !allowed)
        return false;
    domain = at + 1;
    n = strlen(domain);
    if (n == 0)
        return false;
    for (const char *p = allowed; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, domain, n) == 0)
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}
