/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the oidc module's pure half (src/oidc/parse.c) and of the JWS checks of
 * core/crypto.c: discovery, JWKS and token parsing, every refusal of oidc_id_token_verify(),
 * PKCE, and the requests a flow sends. The keys and tokens are fixed vectors made by
 * tests/unit/data/oidc_vectors.mjs (RS256 and ES256 signatures of Node's OpenSSL).
 */
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/oidc/oidc.h"
#include "oidc_vectors.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct oidc_jwks keys, rotated;
static struct arena ka;
static char email_seen[256]; /* the email of the last token check() accepted */

static const struct oidc_expect expect = {OIDC_V_ISS, OIDC_V_AUD, OIDC_V_NONCE, OIDC_V_NOW};

/* Verify 'tok' against 'k' at 'x': the return code, the failed check's name into 'param'. */
static int check(const struct oidc_jwks *k, const struct oidc_expect *x, const char *tok,
                 char *param, struct oidc_claims *c)
{
    struct arena a;
    struct err e;
    struct oidc_claims got;
    int rc;

    arena_init(&a);
    err_clear(&e);
    rc = oidc_id_token_verify(k, x, tok, strlen(tok), &a, &got, &e);
    snprintf(param, 128, "%s", rc ? e.param : "");
    if (!rc && c) {
        *c = got;
        snprintf(email_seen, sizeof(email_seen), "%s", got.email ? got.email : "");
        c->email = email_seen; /* the one claim the tests read after the arena is gone */
    }
    if (rc && (!e.code || strcmp(e.code, "oidc_failed") != 0))
        snprintf(param, 128, "(code not oidc_failed)");
    arena_cleanup(&a);
    return rc;
}

/* A refusal: 'rc' and the name of the check. */
#define REFUSED(tok, want_rc, want_param, what)                                                    \
    do {                                                                                           \
        char p_[128];                                                                              \
        int rc_ = check(&keys, &expect, tok, p_, NULL);                                            \
        is_int(rc_, want_rc, what);                                                                \
        is_str(p_, want_param, what " (the check named)");                                         \
    } while (0)

static void test_base64url(void)
{
    unsigned char out[16];
    size_t n = 0;
    subtest("base64url")
    {
        ok(crypto_base64url_decode("AQAB", 4, out, sizeof(out), &n) == 0 && n == 3 && out[0] == 1 &&
               out[1] == 0 && out[2] == 1,
           "AQAB is 65537");
        ok(crypto_base64url_decode("_-8", 3, out, sizeof(out), &n) == 0 && n == 2 &&
               out[0] == 0xff && out[1] == 0xef,
           "the URL alphabet");
        is_int(crypto_base64url_decode("+/8", 3, out, sizeof(out), &n), ERR_INVALID,
               "the standard alphabet is refused");
        is_int(crypto_base64url_decode("AQ==", 4, out, sizeof(out), &n), ERR_INVALID,
               "padding is refused");
        is_int(crypto_base64url_decode("A", 1, out, sizeof(out), &n), ERR_INVALID,
               "a length no encoding has");
        is_int(crypto_base64url_decode("AR", 2, out, sizeof(out), &n), ERR_INVALID,
               "left-over bits set");
        is_int(crypto_base64url_decode("AAAAAAAA", 8, out, 5, &n), ERR_INVALID,
               "more than the room");
        ok(crypto_base64url_decode("", 0, out, sizeof(out), &n) == 0 && n == 0, "empty");
    }
}

static void test_discovery(void)
{
    struct oidc_discovery d;
    struct arena a;
    struct err e;
    const char *good = "{\"issuer\":\"https://id.example.com\","
                       "\"authorization_endpoint\":\"https://id.example.com/auth\","
                       "\"token_endpoint\":\"https://id.example.com/token\","
                       "\"jwks_uri\":\"https://id.example.com/jwks\"}";
    const char *local = "{\"issuer\":\"http://127.0.0.1:9000\","
                        "\"authorization_endpoint\":\"http://127.0.0.1:9000/auth\","
                        "\"token_endpoint\":\"http://localhost:9000/token\","
                        "\"jwks_uri\":\"http://[::1]:9000/jwks\"}";
    const char *plain = "{\"issuer\":\"https://id.example.com\","
                        "\"authorization_endpoint\":\"http://id.example.com/auth\","
                        "\"token_endpoint\":\"https://id.example.com/token\","
                        "\"jwks_uri\":\"https://id.example.com/jwks\"}";
    const char *no_jwks = "{\"issuer\":\"https://id.example.com\","
                          "\"authorization_endpoint\":\"https://id.example.com/auth\","
                          "\"token_endpoint\":\"https://id.example.com/token\"}";

    arena_init(&a);
    subtest("discovery")
    {
        ok(oidc_discovery_parse(good, strlen(good), "https://id.example.com", &a, &d, &e) == 0,
           "a document is read");
        is_str(d.token_endpoint, "https://id.example.com/token", "its token endpoint");
        is_str(d.jwks_uri, "https://id.example.com/jwks", "its JWKS");
        is_int(oidc_discovery_parse(good, strlen(good), "https://id.example.com/", &a, &d, &e),
               ERR_INVALID, "an issuer that differs by a slash is refused");
        is_str(e.param, "issuer", "the issuer named");
        is_int(oidc_discovery_parse(good, strlen(good), "https://evil.example.com", &a, &d, &e),
               ERR_INVALID, "another issuer is refused");
        ok(oidc_discovery_parse(local, strlen(local), "http://127.0.0.1:9000", &a, &d, &e) == 0,
           "http is allowed to 127.0.0.1, localhost and [::1]");
        is_int(oidc_discovery_parse(plain, strlen(plain), "https://id.example.com", &a, &d, &e),
               ERR_INVALID, "http to another host is refused");
        is_str(e.param, "authorization_endpoint", "the endpoint named");
        is_int(oidc_discovery_parse(no_jwks, strlen(no_jwks), "https://id.example.com", &a, &d, &e),
               ERR_INVALID, "a document without jwks_uri is refused");
        is_int(oidc_discovery_parse("[1]", 3, "https://id.example.com", &a, &d, &e), ERR_INVALID,
               "not an object");
        is_int(oidc_discovery_parse("{", 1, "https://id.example.com", &a, &d, &e), ERR_INVALID,
               "not JSON");
        is_str(oidc_discovery_url("https://id.example.com/", &a),
               "https://id.example.com/.well-known/openid-configuration", "the document's URL");
        is_str(oidc_discovery_url("https://x.example/realms/a", &a),
               "https://x.example/realms/a/.well-known/openid-configuration",
               "an issuer with a path");
        ok(!oidc_url_ok("https://user@id.example.com/"), "a user name is refused");
        ok(!oidc_url_ok("https://id.example.com/#x"), "a fragment is refused");
        ok(!oidc_url_ok("http://127.0.0.1.evil.com/"), "a name that starts like 127.0.0.1");
        ok(!oidc_url_ok("http://localhost@evil.com/"), "localhost as a user name");
        ok(!oidc_url_ok("ftp://id.example.com/"), "another scheme");
        ok(oidc_url_ok("http://localhost:8080/x"), "localhost with a port");
    }
    arena_cleanup(&a);
}

static void test_jwks(void)
{
    struct oidc_jwks k;
    struct arena a;
    struct err e;
    char many[8192];
    size_t n = 0;

    arena_init(&a);
    subtest("jwks")
    {
        is_int(keys.n, 2, "the RSA and the EC signing keys are kept, oct and enc are not");
        is_str(keys.keys[0].kid, "rs1", "the RSA key's kid");
        is_int(keys.keys[0].jwk.alg, CRYPTO_JWS_RS256, "an RS256 key");
        is_int(keys.keys[0].jwk.n_len, 256, "its 2048-bit modulus");
        is_str(keys.keys[1].kid, "ec1", "the EC key's kid");
        is_int(keys.keys[1].jwk.alg, CRYPTO_JWS_ES256, "an ES256 key");
        is_int(oidc_jwks_parse("{\"keys\":[]}", 11, &a, &k, &e), ERR_INVALID,
               "a JWKS without keys is refused");
        is_int(oidc_jwks_parse("{\"keys\":[{\"kty\":\"oct\",\"k\":\"AA\"}]}", 33, &a, &k, &e),
               ERR_INVALID, "a JWKS of a symmetric key alone is refused");
        is_int(oidc_jwks_parse("{\"keys\":{}}", 11, &a, &k, &e), ERR_INVALID, "keys not an array");
        is_int(oidc_jwks_parse("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}", 46,
                               &a, &k, &e),
               ERR_INVALID, "an RSA key under 2048 bits is left out");
        is_int(oidc_jwks_parse("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":"
                               "\"AA\"}]}",
                               58, &a, &k, &e),
               ERR_INVALID, "another curve is left out");
        n += (size_t)snprintf(many, sizeof(many), "{\"keys\":[");
        for (int i = 0; i < OIDC_KEYS_MAX + 1; i++)
            n += (size_t)snprintf(many + n, sizeof(many) - n, "%s{\"kty\":\"oct\"}", i ? "," : "");
        n += (size_t)snprintf(many + n, sizeof(many) - n, "]}");
        is_int(oidc_jwks_parse(many, n, &a, &k, &e), ERR_INVALID, "33 keys are too many");
        is_int(oidc_jwks_parse(many, OIDC_JWKS_MAX + 1, &a, &k, &e), ERR_INVALID,
               "over 64 KiB is refused before it is read");
    }
    arena_cleanup(&a);
}

static void test_jwt_parse(void)
{
    struct oidc_jwt t;
    struct arena a;
    struct err e;
    const char *good = OIDC_V_AUD_ARRAY_AZP;
    char *big = calloc(1, OIDC_TOKEN_MAX + 2);

    arena_init(&a);
    subtest("jwt parse")
    {
        ok(oidc_jwt_parse(good, strlen(good), &a, &t, &e) == 0, "a token is read");
        is_str(t.alg, "RS256", "its alg");
        is_str(t.kid, "rs1", "its kid");
        is_int(t.claims.naud, 2, "an array of audiences");
        is_str(t.claims.azp, OIDC_V_AUD, "azp");
        is_str(t.claims.email, "ada@example.com", "email");
        ok(t.claims.email_verified, "email_verified");
        is_str(t.claims.name, "Ada Lovelace", "name");
        is_int(t.sig_len, 256, "the signature's bytes");
        {
            /* email_verified, or Entra ID's xms_edov when email_verified is absent */
            static const char *const claims[] = {
                "{\"email\":\"a@b.c\",\"xms_edov\":true}",
                "{\"email\":\"a@b.c\",\"xms_edov\":true,\"email_verified\":false}",
                "{\"email\":\"a@b.c\",\"xms_edov\":\"true\"}",
                "{\"email\":\"a@b.c\"}",
            };
            static const bool want[] = {true, false, false, false};
            for (size_t i = 0; i < 4; i++) {
                char h[64], p[256], tok[400];
                crypto_base64url((const unsigned char *)"{\"alg\":\"RS256\"}", 15, h);
                crypto_base64url((const unsigned char *)claims[i], strlen(claims[i]), p);
                snprintf(tok, sizeof(tok), "%s.%s.AAAA", h, p);
                ok(oidc_jwt_parse(tok, strlen(tok), &a, &t, &e) == 0 &&
                       t.claims.email_verified == want[i],
                   claims[i]);
            }
        }
        is_int(oidc_jwt_parse("a.b", 3, &a, &t, &e), ERR_INVALID, "two parts");
        is_int(oidc_jwt_parse("a.b.c.d", 7, &a, &t, &e), ERR_INVALID, "four parts");
        is_int(oidc_jwt_parse("..", 2, &a, &t, &e), ERR_INVALID, "empty parts");
        is_int(oidc_jwt_parse("e30.e30.", 8, &a, &t, &e), ERR_INVALID, "a header without alg");
        /* {"alg":"RS256"} . {"exp":"soon"} . "" */
        is_int(oidc_jwt_parse("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOiJzb29uIn0.", 41, &a, &t, &e),
               ERR_INVALID, "an exp that is not a number");
        /* {"alg":"RS256"} . {"aud":[1]} */
        is_int(oidc_jwt_parse("eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOlsxXX0.", 37, &a, &t, &e), ERR_INVALID,
               "an audience that is not a string");
        /* {"alg":"RS256","crit":["x"]} . {} */
        is_int(oidc_jwt_parse("eyJhbGciOiJSUzI1NiIsImNyaXQiOlsieCJdfQ.e30.", 43, &a, &t, &e),
               ERR_INVALID, "a crit header");
        /* {"alg":"RS256"} . {} . '!' */
        is_int(oidc_jwt_parse("eyJhbGciOiJSUzI1NiJ9.e30.!", 26, &a, &t, &e), ERR_INVALID,
               "a signature outside base64url");
        memset(big, 'A', OIDC_TOKEN_MAX + 1);
        is_int(oidc_jwt_parse(big, OIDC_TOKEN_MAX + 1, &a, &t, &e), ERR_INVALID,
               "over 16 KiB is refused");
        is_str(e.param, "token", "a malformed token names the token");
    }
    free(big);
    arena_cleanup(&a);
}

static void test_verify(void)
{
    struct oidc_claims c;
    struct oidc_expect x = expect;
    char p[128];

    subtest("verify: accepted")
    {
        is_int(check(&keys, &expect, OIDC_V_GOOD_RS256, p, &c), 0, "a good RS256 token");
        is_str(c.email, "ada@example.com", "its email");
        is_int(check(&keys, &expect, OIDC_V_GOOD_ES256, p, &c), 0, "a good ES256 token");
        is_int(check(&keys, &expect, OIDC_V_AUD_ARRAY_AZP, p, NULL), 0,
               "several audiences with this client as azp");
        is_int(check(&keys, &expect, OIDC_V_EXP_IN_SKEW, p, NULL), 0,
               "expired 30 s ago: within the 60 s skew");
        is_int(check(&keys, &expect, OIDC_V_NO_KID_ONE_MATCH, p, NULL), 0,
               "no kid, and exactly one key of its alg");
        is_int(check(&keys, &expect, OIDC_V_UNVERIFIED, p, &c), 0,
               "an unverified email still verifies as a token");
        ok(!c.email_verified, "... and says so");
    }
    subtest("verify: refused")
    {
        REFUSED(OIDC_V_BAD_SIG, ERR_INVALID, "signature", "a signature with a bit flipped");
        REFUSED(OIDC_V_CLAIMS_ALTERED, ERR_INVALID, "signature", "claims altered after signing");
        REFUSED(OIDC_V_RESIGNED, ERR_INVALID, "signature", "re-signed by a key not in the JWKS");
        REFUSED(OIDC_V_ALG_NONE, ERR_INVALID, "alg", "alg none");
        REFUSED(OIDC_V_HS256, ERR_INVALID, "alg", "HS256 keyed with the RSA modulus");
        REFUSED(OIDC_V_HS256_OCT, ERR_INVALID, "alg", "HS256 naming the JWKS's oct key");
        REFUSED(OIDC_V_ALG_MISMATCH, ERR_INVALID, "alg", "RS256 naming the EC key");
        REFUSED(OIDC_V_ENC_KEY, ERR_NOT_FOUND, "kid", "a kid of an encryption key");
        REFUSED(OIDC_V_UNKNOWN_KID, ERR_NOT_FOUND, "kid", "an unknown kid");
        REFUSED(OIDC_V_WRONG_ISS, ERR_INVALID, "iss", "another issuer");
        REFUSED(OIDC_V_WRONG_AUD, ERR_INVALID, "aud", "another audience");
        REFUSED(OIDC_V_AUD_ARRAY_NO_AZP, ERR_INVALID, "azp", "several audiences, no azp");
        REFUSED(OIDC_V_AUD_ARRAY_AZP_OTHER, ERR_INVALID, "azp", "several audiences, another azp");
        REFUSED(OIDC_V_EXPIRED, ERR_INVALID, "exp", "expired 120 s ago");
        REFUSED(OIDC_V_NO_EXP, ERR_INVALID, "exp", "no exp");
        REFUSED(OIDC_V_IAT_FUTURE, ERR_INVALID, "iat", "issued 10 minutes from now");
        REFUSED(OIDC_V_NBF_FUTURE, ERR_INVALID, "nbf", "not before 10 minutes from now");
        REFUSED(OIDC_V_WRONG_NONCE, ERR_INVALID, "nonce", "another nonce");
        REFUSED(OIDC_V_NO_NONCE, ERR_INVALID, "nonce", "no nonce");
        REFUSED("not.a.token", ERR_INVALID, "token", "malformed");
        x.nonce = "";
        is_int(check(&keys, &x, OIDC_V_GOOD_RS256, p, NULL), ERR_INVALID,
               "an empty expected nonce matches nothing");
        x = expect;
        x.now_s = OIDC_V_NOW + 300 + OIDC_SKEW_S;
        is_int(check(&keys, &x, OIDC_V_GOOD_RS256, p, NULL), ERR_INVALID,
               "a good token checked after exp + skew");
        is_str(p, "exp", "... is expired");
        x = expect;
        x.client_id = "wf-client-2";
        is_int(check(&keys, &x, OIDC_V_GOOD_RS256, p, NULL), ERR_INVALID,
               "a client id that the audience starts with");
    }
    subtest("verify: a rotated key")
    {
        is_int(check(&rotated, &expect, OIDC_V_RESIGNED, p, NULL), 0,
               "the re-signed token verifies with the provider's new key under the old kid");
        is_int(check(&rotated, &expect, OIDC_V_GOOD_RS256, p, NULL), ERR_INVALID,
               "and a token of the old key no longer does");
        is_str(p, "signature", "... its signature");
    }
}

static void test_crypto_keys(void)
{
    struct crypto_jwk k = keys.keys[1].jwk;
    unsigned char x[CRYPTO_P256_LEN], sig[64] = {0};
    subtest("crypto keys")
    {
        memcpy(x, k.x, sizeof(x));
        x[31] ^= 1;
        k.x = x;
        is_int(crypto_jws_verify(&k, "a.b", 3, sig, sizeof(sig)), ERR_INVALID,
               "a point off the curve");
        k = keys.keys[0].jwk;
        is_int(crypto_jws_verify(&k, "a.b", 3, sig, sizeof(sig)), ERR_INVALID,
               "an RSA signature shorter than the modulus");
        k.alg = 7;
        is_int(crypto_jws_verify(&k, "a.b", 3, sig, sizeof(sig)), ERR_INVALID,
               "an algorithm crypto does not know");
    }
}

static void test_flow(void)
{
    struct oidc_flow f, g;
    struct arena a;
    char ch[OIDC_RANDOM_LEN + 1];
    const char *u;

    arena_init(&a);
    subtest("flow")
    {
        ok(oidc_flow_new(&f) == 0 && oidc_flow_new(&g) == 0, "two flows");
        is_int(strlen(f.state), 43, "a state of 32 bytes");
        is_int(strlen(f.verifier), 43, "a verifier of 32 bytes (RFC 7636: 43 to 128)");
        ok(strcmp(f.state, g.state) != 0 && strcmp(f.nonce, g.nonce) != 0 &&
               strcmp(f.state, f.nonce) != 0,
           "fresh each time");
        /* RFC 7636 appendix B */
        oidc_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", ch);
        is_str(ch, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "the S256 challenge");
        memcpy(f.state, "s", 2);
        memcpy(f.nonce, "n", 2);
        memcpy(f.challenge, "c", 2);
        u = oidc_authorize_url("https://id.example.com/auth", "wf client",
                               "https://wf.example.com/v1/sessions/oidc/callback", &f, &a);
        is_str(u,
               "https://id.example.com/auth?response_type=code&client_id=wf%20client&redirect_"
               "uri=https%3A%2F%2Fwf.example.com%2Fv1%2Fsessions%2Foidc%2Fcallback&scope=openid%"
               "20email%20profile&state=s&nonce=n&code_challenge=c&code_challenge_method=S256",
               "the authorization URL");
        u = oidc_authorize_url("https://id.example.com/auth?tenant=a", "c", "r", &f, &a);
        ok(strncmp(u, "https://id.example.com/auth?tenant=a&response_type=code", 55) == 0,
           "an endpoint with a query");
        is_str(oidc_code_form("a&b", "r", "v", &a),
               "grant_type=authorization_code&code=a%26b&redirect_uri=r&code_verifier=v",
               "the token request");
        is_str(oidc_basic_auth("c:1", "s", &a),
               "Authorization: Basic YyUzQTE6cw==", "client_secret_basic encodes before base64");
    }
    arena_cleanup(&a);
}

static void test_token_answer(void)
{
    struct arena a;
    struct err e;
    const char *t = NULL;

    arena_init(&a);
    subtest("token answer")
    {
        const char *answer = "{\"id_token\":\"x.y.z\",\"access_token\":\"a\"}";
        ok(oidc_token_answer_parse(200, answer, strlen(answer), &a, &t, &e) == 0,
           "an answer with an id_token");
        is_str(t, "x.y.z", "the id_token");
        is_int(oidc_token_answer_parse(400, "{\"error\":\"invalid_grant\"}", 25, &a, &t, &e),
               ERR_UPSTREAM, "an error status");
        ok(strstr(e.msg, "invalid_grant") != NULL, "the OAuth error is told");
        is_int(oidc_token_answer_parse(200, "{\"access_token\":\"a\"}", 20, &a, &t, &e),
               ERR_UPSTREAM, "no id_token");
        is_int(oidc_token_answer_parse(200, "<html>", 6, &a, &t, &e), ERR_UPSTREAM, "not JSON");
        ok(t == NULL, "nothing given on failure");
    }
    arena_cleanup(&a);
}

static void test_domains(void)
{
    subtest("allowed domains")
    {
        ok(oidc_email_domain_allowed("ada@example.com", "example.com"), "the domain");
        ok(oidc_email_domain_allowed("Ada@Example.COM", "b.org,example.com"), "any case, a list");
        ok(!oidc_email_domain_allowed("ada@evil-example.com", "example.com"), "a longer domain");
        ok(!oidc_email_domain_allowed("ada@sub.example.com", "example.com"), "a subdomain");
        ok(!oidc_email_domain_allowed("ada@example.com.evil.org", "example.com"), "a suffix");
        ok(!oidc_email_domain_allowed("ada@example.co", "example.com"), "a shorter domain");
        ok(!oidc_email_domain_allowed("a@b@example.com", "example.com"), "two @");
        ok(!oidc_email_domain_allowed("@example.com", "example.com"), "no local part");
        ok(!oidc_email_domain_allowed("ada@example.com", ""), "an empty list allows nothing");
        ok(!oidc_email_domain_allowed("ada@", "example.com,"), "an empty domain");
        ok(!oidc_email_domain_allowed(NULL, "example.com"), "no email");
    }
}

int main(void)
{
    struct err e;
    arena_init(&ka);
    if (oidc_jwks_parse(OIDC_V_JWKS, strlen(OIDC_V_JWKS), &ka, &keys, &e) ||
        oidc_jwks_parse(OIDC_V_JWKS_ROTATED, strlen(OIDC_V_JWKS_ROTATED), &ka, &rotated, &e)) {
        printf("Bail out! the test JWKS does not parse: %s\n", e.msg);
        return 1;
    }
    test_base64url();
    test_discovery();
    test_jwks();
    test_jwt_parse();
    test_verify();
    test_crypto_keys();
    test_flow();
    test_token_answer();
    test_domains();
    arena_cleanup(&ka);
    return done_testing();
}
