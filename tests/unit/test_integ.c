/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of integrations/: the provider table and its settings, the sealing key and what
 * sealing binds (tenant, provider, purpose), PKCE, the authorization URL, the token request
 * bodies, and every kind of token endpoint answer.
 */
#include "../../src/core/config.h"
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/integrations/oauth.h"
#include "../../src/integrations/providers.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static struct config cfg;

static void providers(void)
{
    subtest("providers")
    {
        const char *ids[] = {"slack", "google_calendar", "outlook", "github", "hubspot"};
        for (size_t i = 0; i < 5; i++) {
            const struct integ_provider *p = integ_provider_find(ids[i]);
            ok(p && p == integ_provider_at(i), ids[i]);
            ok(p && p->operations && p->operations[0] &&
                   strncmp(p->operations[0], ids[i], strlen(ids[i])) == 0,
               "its operations are named after it");
            ok(p && strncmp(p->auth_url, "https://", 8) == 0 &&
                   strncmp(p->token_url, "https://", 8) == 0 &&
                   strncmp(p->api_url, "https://", 8) == 0,
               "real https defaults");
        }
        ok(integ_provider_find("dropbox") == NULL, "unknown provider");
        ok(integ_provider_find(NULL) == NULL, "NULL");
        ok(integ_provider_at(5) == NULL, "past the end");
        memset(&cfg, 0, sizeof(cfg));
        ok(!integ_configured(&cfg, integ_provider_find("github")), "not configured");
        snprintf(cfg.oauth[3][CONFIG_OAUTH_CLIENT_ID], CONFIG_OAUTH_VALUE_MAX, "gh-id");
        ok(!integ_configured(&cfg, integ_provider_find("github")), "an id alone is not enough");
        snprintf(cfg.oauth[3][CONFIG_OAUTH_CLIENT_SECRET], CONFIG_OAUTH_VALUE_MAX, "gh-secret");
        ok(integ_configured(&cfg, integ_provider_find("github")), "id and secret: configured");
        is_str(integ_setting(&cfg, integ_provider_find("github"), CONFIG_OAUTH_TOKEN_URL),
               "https://github.com/login/oauth/access_token", "the default token URL");
        snprintf(cfg.oauth[3][CONFIG_OAUTH_TOKEN_URL], CONFIG_OAUTH_VALUE_MAX,
                 "http://127.0.0.1:9/token");
        is_str(integ_setting(&cfg, integ_provider_find("github"), CONFIG_OAUTH_TOKEN_URL),
               "http://127.0.0.1:9/token", "overridden");
        is_str(integ_setting(&cfg, integ_provider_find("slack"), CONFIG_OAUTH_SIGNING_SECRET), "",
               "no default secret");
    }
}

static void sealing(void)
{
    subtest("sealing")
    {
        unsigned char secret[32], key[32], key2[32];
        struct store_tenant t = {"org_1", STORE_LIVE}, other = {"org_2", STORE_LIVE},
                            test = {"org_1", STORE_TEST};
        struct arena a;
        size_t n = 0;
        unsigned char *sealed;

        arena_init(&a);
        memset(secret, 3, sizeof(secret));
        is_int(integ_key(secret, sizeof(secret), key), 0, "key derived");
        integ_key(secret, sizeof(secret), key2);
        ok(memcmp(key, key2, 32) == 0, "deterministic");
        ok(memcmp(key, secret, 32) != 0, "not the secret itself");
        sealed = integ_seal(key, &t, "slack", "tokens", "{\"access_token\":\"xoxb-1\"}", &a, &n);
        ok(sealed && n == strlen("{\"access_token\":\"xoxb-1\"}") + CRYPTO_SEAL_OVERHEAD, "sealed");
        is_str(integ_open(key, &t, "slack", "tokens", sealed, n, &a),
               "{\"access_token\":\"xoxb-1\"}", "opens for its owner");
        ok(!integ_open(key, &other, "slack", "tokens", sealed, n, &a), "not another org");
        ok(!integ_open(key, &test, "slack", "tokens", sealed, n, &a), "not the other mode");
        ok(!integ_open(key, &t, "github", "tokens", sealed, n, &a), "not another provider");
        ok(!integ_open(key, &t, "slack", "verifier", sealed, n, &a), "not another purpose");
        memset(secret, 4, sizeof(secret));
        integ_key(secret, sizeof(secret), key2);
        ok(!integ_open(key2, &t, "slack", "tokens", sealed, n, &a), "not another server");
        ok(!integ_open(key, &t, "slack", "tokens", sealed, 10, &a), "not a cut blob");
        arena_cleanup(&a);
    }
}

static void pkce_and_urls(void)
{
    subtest("pkce and urls")
    {
        char v[INTEG_VERIFIER_LEN + 1], c[INTEG_CHALLENGE_LEN + 1], v2[INTEG_VERIFIER_LEN + 1],
            c2[INTEG_CHALLENGE_LEN + 1], want[INTEG_CHALLENGE_LEN + 1];
        unsigned char h[32];
        struct arena a;
        const char *url, *form;

        arena_init(&a);
        is_int(integ_pkce(v, c), 0, "pkce");
        integ_pkce(v2, c2);
        is_int(strlen(v), 64, "verifier of 64 characters (RFC 7636: 43..128)");
        ok(strcmp(v, v2) != 0, "a new verifier each time");
        crypto_sha256(v, strlen(v), h);
        crypto_base64url(h, 32, want);
        is_str(c, want, "challenge = BASE64URL(SHA256(verifier))");

        memset(&cfg, 0, sizeof(cfg));
        snprintf(cfg.public_url, sizeof(cfg.public_url), "https://wf.example.com/");
        snprintf(cfg.oauth[0][CONFIG_OAUTH_CLIENT_ID], CONFIG_OAUTH_VALUE_MAX, "sl id");
        snprintf(cfg.oauth[0][CONFIG_OAUTH_CLIENT_SECRET], CONFIG_OAUTH_VALUE_MAX, "s&cret");
        is_str(integ_callback_url(&cfg, integ_provider_find("slack"), &a),
               "https://wf.example.com/v1/integrations/slack/callback", "callback URL");
        url = integ_authorize_url(&cfg, integ_provider_find("slack"), "chat:write channels:read",
                                  "ST4TE", "CH4LL", &a);
        is_str(url,
               "https://slack.com/oauth/v2/authorize?response_type=code&client_id=sl%20id"
               "&redirect_uri=https%3A%2F%2Fwf.example.com%2Fv1%2Fintegrations%2Fslack%2Fcallback"
               "&scope=chat%3Awrite%2Cchannels%3Aread&state=ST4TE&code_challenge=CH4LL"
               "&code_challenge_method=S256",
               "Slack: scopes joined by commas, everything encoded");
        url =
            integ_authorize_url(&cfg, integ_provider_find("google_calendar"), "a  b", "S", "C", &a);
        ok(strstr(url, "&scope=a%20b&") && strstr(url, "&access_type=offline&prompt=consent"),
           "Google: space separated, offline access asked");
        snprintf(cfg.oauth[4][CONFIG_OAUTH_AUTH_URL], CONFIG_OAUTH_VALUE_MAX,
                 "http://127.0.0.1:1/auth?tenant=x");
        url = integ_authorize_url(&cfg, integ_provider_find("hubspot"), "x", "S", "C", &a);
        ok(strncmp(url, "http://127.0.0.1:1/auth?tenant=x&response_type=code", 51) == 0,
           "an overridden URL with a query of its own");
        form = integ_code_form(&cfg, integ_provider_find("slack"), "c/1", "VER", &a);
        is_str(form,
               "grant_type=authorization_code&code=c%2F1&redirect_uri=https%3A%2F%2Fwf.example.com"
               "%2Fv1%2Fintegrations%2Fslack%2Fcallback&code_verifier=VER&client_id=sl%20id"
               "&client_secret=s%26cret",
               "code form");
        form = integ_refresh_form(&cfg, integ_provider_find("slack"), "r+1", &a);
        is_str(form,
               "grant_type=refresh_token&refresh_token=r%2B1&client_id=sl%20id"
               "&client_secret=s%26cret",
               "refresh form");
        arena_cleanup(&a);
    }
}

static int parse(long status, const char *body, struct arena *a, struct integ_token *t, char *code,
                 char *why)
{
    return integ_token_parse(status, body, strlen(body), a, t, code, 64, why, 256);
}

static void token_answers(void)
{
    subtest("token answers")
    {
        struct arena a;
        struct integ_token t;
        char code[64], why[256];

        arena_init(&a);
        is_int(parse(200,
                     "{\"access_token\":\"at\",\"refresh_token\":\"rt\",\"expires_in\":3600,"
                     "\"scope\":\"a b\",\"token_type\":\"Bearer\"}",
                     &a, &t, code, why),
               0, "a standard answer");
        is_str(t.access_token, "at", "access token");
        is_str(t.refresh_token, "rt", "refresh token");
        is_int(t.expires_in, 3600, "expires_in");
        is_str(t.scope, "a b", "scope");
        ok(t.account == NULL, "no account");
        is_int(parse(200,
                     "{\"ok\":true,\"access_token\":\"xoxb\",\"scope\":\"chat:write\","
                     "\"team\":{\"id\":\"T1\",\"name\":\"Acme\"}}",
                     &a, &t, code, why),
               0, "Slack");
        is_str(t.account, "Acme", "Slack's team name is the account");
        ok(t.refresh_token == NULL && t.expires_in == 0, "no refresh, no expiry");
        is_int(parse(200, "{\"access_token\":\"x\",\"expires_in\":\"1800\"}", &a, &t, code, why), 0,
               "quoted expires_in");
        is_int(t.expires_in, 1800, "read");
        is_int(parse(400, "{\"error\":\"invalid_grant\",\"error_description\":\"code used\"}", &a,
                     &t, code, why),
               ERR_UPSTREAM, "an OAuth error");
        is_str(code, "invalid_grant", "its code");
        ok(strstr(why, "code used") != NULL, "its description");
        ok(t.access_token == NULL, "nothing kept");
        is_int(parse(200, "{\"ok\":false,\"error\":\"invalid_code\"}", &a, &t, code, why),
               ERR_UPSTREAM, "Slack refusing with HTTP 200");
        is_str(code, "invalid_code", "Slack's error");
        is_int(parse(200, "<html>sign in</html>", &a, &t, code, why), ERR_UPSTREAM, "HTML");
        is_str(code, "invalid_response", "not a token answer");
        is_int(parse(500, "", &a, &t, code, why), ERR_UPSTREAM, "empty 500");
        is_int(parse(502, "{\"access_token\":\"x\"}", &a, &t, code, why), ERR_UPSTREAM,
               "a token with an error status is no answer");
        is_int(parse(200, "{\"token_type\":\"Bearer\"}", &a, &t, code, why), ERR_UPSTREAM,
               "no access token");
        is_int(parse(200, "{\"access_token\":\"\"}", &a, &t, code, why), ERR_UPSTREAM,
               "an empty access token");
        is_int(parse(200, "{\"access_token\":\"a\",\"access_token\":\"b\"}", &a, &t, code, why),
               ERR_UPSTREAM, "duplicate members refused");
        is_int(parse(200, "[1]", &a, &t, code, why), ERR_UPSTREAM, "an array");
        is_int(parse(200, "{\"access_token\":\"x\",\"expires_in\":-5}", &a, &t, code, why), 0,
               "a negative expiry");
        is_int(t.expires_in, 0, "is ignored");
        arena_cleanup(&a);
    }
}

/* Issue 26 finding 7: a value becomes a segment of a provider's URL path only when it is one. */
static void segments(void)
{
    subtest("path segments")
    {
        ok(integ_segment_ok("acme", 100, "-_"), "a name");
        ok(integ_segment_ok("widgets.js", 100, "-_."), "dots inside a name");
        ok(integ_segment_ok("team@group.calendar.google.com", 1024, NULL), "any byte to encode");
        ok(!integ_segment_ok("..", 100, "-_."), "..");
        ok(!integ_segment_ok(".", 100, NULL), ".");
        ok(!integ_segment_ok("", 100, NULL), "empty");
        ok(!integ_segment_ok(NULL, 100, NULL), "none");
        ok(!integ_segment_ok("a/b", 100, "-_."), "a slash where only names pass");
        ok(!integ_segment_ok("a%2e", 100, "-_."), "an escape where only names pass");
        ok(!integ_segment_ok("a\nb", 100, NULL), "a control character");
        ok(!integ_segment_ok("abcd", 3, NULL), "longer than the maximum");
        ok(integ_segment_ok("abc", 3, NULL), "the maximum");
    }
}

int main(void)
{
    segments();
    providers();
    sealing();
    pkce_and_urls();
    token_answers();
    return done_testing();
}
