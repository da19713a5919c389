/* SPDX-License-Identifier: MIT */
/* oauth.c: see oauth.h. */
#include "oauth.h"

#include "../core/buf.h"
#include "../core/err.h"
#include "../core/id.h"

#include <ctype.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MAX (64u << 10)

/* See oauth.h. */
int integ_key(const unsigned char *secret, size_t len, unsigned char key[CRYPTO_SEAL_KEY_LEN])
{
    static const char salt[] = "workforce";
    static const char info[] = "integration secrets v1";
    return crypto_hkdf_sha256(secret, len, salt, sizeof(salt) - 1, info, sizeof(info) - 1, key,
                              CRYPTO_SEAL_KEY_LEN);
}

static void aad_of(struct buf *b, const struct store_tenant *t, const char *provider,
                   const char *what)
{
    buf_appendf(b, "%s/%s/%s/%s", t->org_id, t->mode == STORE_LIVE ? "live" : "test", provider,
                what);
}

/* See oauth.h. */
unsigned char *integ_seal(const unsigned char key[CRYPTO_SEAL_KEY_LEN],
                          const struct store_tenant *t, const char *provider, const char *what,
                          const char *text, struct arena *a, size_t *n)
{
    size_t len = strlen(text);
    unsigned char *out = arena_alloc(a, len + CRYPTO_SEAL_OVERHEAD);
    struct buf aad;
    int rc;

    buf_init(&aad, 1024);
    aad_of(&aad, t, provider, what);
    rc = crypto_seal(key, buf_ptr(&aad), buf_len(&aad), text, len, out);
    buf_cleanup(&aad);
    *n = rc ? 0 : len + CRYPTO_SEAL_OVERHEAD;
    return rc ? NULL : out;
}

/* See oauth.h. */
char *integ_open(const unsigned char key[CRYPTO_SEAL_KEY_LEN], const struct store_tenant *t,
                 const char *provider, const char *what, const unsigned char *in, size_t n,
                 struct arena *a)
{
    char *out;
    struct buf aad;
    int rc;

    if (!in || n < CRYPTO_SEAL_OVERHEAD)
        return NULL;
    out = arena_alloc(a, n - CRYPTO_SEAL_OVERHEAD + 1);
    buf_init(&aad, 1024);
    aad_of(&aad, t, provider, what);
    rc = crypto_open(key, buf_ptr(&aad), buf_len(&aad), in, n, out);
    buf_cleanup(&aad);
    if (rc)
        return NULL;
    out[n - CRYPTO_SEAL_OVERHEAD] = '\0';
    return out;
}

/* See oauth.h. */
int integ_pkce(char verifier[INTEG_VERIFIER_LEN + 1], char challenge[INTEG_CHALLENGE_LEN + 1])
{
    unsigned char h[CRYPTO_SHA256_LEN];
    if (id_base62(verifier, INTEG_VERIFIER_LEN))
        return ERR_INTERNAL;
    crypto_sha256(verifier, INTEG_VERIFIER_LEN, h);
    crypto_base64url(h, sizeof(h), challenge);
    return 0;
}

static const char *take(struct buf *b, struct arena *a)
{
    const char *s = arena_strdup(a, buf_ptr(b));
    buf_cleanup(b);
    return s;
}

/* Whether 'origin' is one of the comma-separated 'list'. */
static bool origin_listed(const char *list, const char *origin)
{
    size_t n = strlen(origin);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, origin, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* See oauth.h. The origin is compared as the browser will read it (config_origin): a host
 * written "app.example.com@evil.example" or "app.example.com\\@evil" never passes. */
int integ_redirect_uri(const struct config *c, const char *uri, struct arena *a, const char **out,
                       struct err *e)
{
    static const char hex[] = "0123456789ABCDEF";
    char origin[300];
    size_t end = 0, len = strlen(uri);
    struct buf b;

    *out = NULL;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++) {
        if (*p <= ' ' || *p == 0x7f || *p == '#' || *p == '\\')
            return err_set(e, ERR_INVALID, "invalid_request", "redirect_uri",
                           "Invalid redirect_uri: must be an absolute http:// or https:// URL "
                           "with a host and no fragment.");
    }
    if (config_origin(uri, len, origin, sizeof(origin), &end)) {
        if (memchr(uri, '@', end))
            return err_set(e, ERR_INVALID, "invalid_request", "redirect_uri",
                           "Invalid redirect_uri: no user name or password before the host.");
        return err_set(e, ERR_INVALID, "invalid_request", "redirect_uri",
                       "Invalid redirect_uri: must be an absolute http:// or https:// URL with a "
                       "host and no fragment.");
    }
    if (!origin_listed(c->oauth_redirect_origins, origin))
        return err_set(e, ERR_INVALID, "invalid_request", "redirect_uri",
                       "Invalid redirect_uri: %.200s is not an origin this server sends users "
                       "back to (the operator lists them in WORKFORCE_OAUTH_REDIRECT_ORIGINS).",
                       origin);
    buf_init(&b, URL_MAX);
    buf_appends(&b, origin);
    for (const unsigned char *p = (const unsigned char *)uri + end; *p; p++) {
        bool hexpair = *p == '%' && isxdigit(p[1]) && isxdigit(p[2]);
        if (*p >= 0x80 || strchr("\"<>^`{|}", *p) || (*p == '%' && !hexpair)) {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            buf_append(&b, esc, 3);
        } else {
            buf_append(&b, p, 1);
        }
    }
    *out = take(&b, a);
    return 0;
}

/* See oauth.h. */
const char *integ_callback_url(const struct config *c, const struct integ_provider *p,
                               struct arena *a)
{
    struct buf b;
    size_t n = strlen(c->public_url);
    buf_init(&b, URL_MAX);
    buf_append(&b, c->public_url, n > 0 && c->public_url[n - 1] == '/' ? n - 1 : n);
    buf_appendf(&b, "/v1/integrations/%s/callback", p->id);
    return take(&b, a);
}

/* See oauth.h. */
json_t *integ_scope_list(const char *text)
{
    json_t *arr = json_array();
    for (const char *s = text; *s;) {
        size_t n;
        while (*s == ' ' || *s == ',')
            s++;
        n = strcspn(s, " ,");
        if (n)
            json_array_append_new(arr, json_stringn(s, n));
        s += n;
    }
    return arr;
}

/* Append 'scopes' (space separated) joined by the provider's separator, URL-encoded. */
static void append_scopes(struct buf *b, const struct integ_provider *p, const char *scopes)
{
    json_t *list = integ_scope_list(scopes), *v;
    struct buf joined;
    size_t i;

    buf_init(&joined, URL_MAX);
    json_array_foreach(list, i, v)
    {
        if (i)
            buf_append(&joined, &p->scope_sep, 1);
        buf_appends(&joined, json_string_value(v));
    }
    buf_append_urlenc(b, buf_ptr(&joined));
    buf_cleanup(&joined);
    json_decref(list);
}

/* See oauth.h. */
const char *integ_authorize_url(const struct config *c, const struct integ_provider *p,
                                const char *scopes, const char *state, const char *challenge,
                                struct arena *a)
{
    const char *base = integ_setting(c, p, CONFIG_OAUTH_AUTH_URL);
    struct buf b;

    buf_init(&b, URL_MAX);
    buf_appends(&b, base);
    buf_appends(&b, strchr(base, '?') ? "&" : "?");
    buf_appends(&b, "response_type=code&client_id=");
    buf_append_urlenc(&b, integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
    buf_appends(&b, "&redirect_uri=");
    buf_append_urlenc(&b, integ_callback_url(c, p, a));
    buf_appends(&b, "&scope=");
    append_scopes(&b, p, scopes);
    buf_appends(&b, "&state=");
    buf_append_urlenc(&b, state);
    buf_appends(&b, "&code_challenge=");
    buf_append_urlenc(&b, challenge);
    buf_appends(&b, "&code_challenge_method=S256");
    buf_appends(&b, p->extra_auth_params);
    return take(&b, a);
}

/* See oauth.h. The client authenticates in the body (client_secret_post), which every one of
 * the five providers accepts. */
const char *integ_code_form(const struct config *c, const struct integ_provider *p,
                            const char *code, const char *verifier, struct arena *a)
{
    struct buf b;
    buf_init(&b, URL_MAX);
    buf_form_pair(&b, "grant_type", "authorization_code");
    buf_form_pair(&b, "code", code);
    buf_form_pair(&b, "redirect_uri", integ_callback_url(c, p, a));
    buf_form_pair(&b, "code_verifier", verifier);
    buf_form_pair(&b, "client_id", integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
    buf_form_pair(&b, "client_secret", integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET));
    return take(&b, a);
}

/* See oauth.h. */
const char *integ_refresh_form(const struct config *c, const struct integ_provider *p,
                               const char *refresh_token, struct arena *a)
{
    struct buf b;
    buf_init(&b, URL_MAX);
    buf_form_pair(&b, "grant_type", "refresh_token");
    buf_form_pair(&b, "refresh_token", refresh_token);
    buf_form_pair(&b, "client_id", integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
    buf_form_pair(&b, "client_secret", integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET));
    return take(&b, a);
}

/* A string member of 'o' that is not empty, copied into 'a', or NULL. */
static const char *member(const json_t *o, const char *k, struct arena *a)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v && *v ? arena_strdup(a, v) : NULL;
}

/* See oauth.h. */
int integ_token_parse(long status, const char *body, size_t len, struct arena *a,
                      struct integ_token *out, char *code, size_t code_n, char *why, size_t why_n)
{
    json_t *o = NULL, *exp;
    const char *err;
    int rc = ERR_UPSTREAM;

    memset(out, 0, sizeof(*out));
    snprintf(code, code_n, "invalid_response");
    if (len > INTEG_TOKEN_RESPONSE_MAX) {
        snprintf(why, why_n, "the token endpoint answered more than %u bytes",
                 INTEG_TOKEN_RESPONSE_MAX);
        return rc;
    }
    o = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o)) {
        snprintf(why, why_n, "the token endpoint answered HTTP %ld without a JSON object", status);
        goto out;
    }
    err = json_string_value(json_object_get(o, "error"));
    if (err && *err) {
        const char *desc = json_string_value(json_object_get(o, "error_description"));
        snprintf(code, code_n, "%s", err);
        snprintf(why, why_n, "the provider refused: %s%s%s", err, desc ? ": " : "",
                 desc ? desc : "");
        goto out;
    }
    if (json_is_false(json_object_get(o, "ok"))) { /* Slack: HTTP 200 {ok: false} */
        snprintf(why, why_n, "the provider refused without saying why");
        goto out;
    }
    if (status < 200 || status > 299) {
        snprintf(why, why_n, "the token endpoint answered HTTP %ld", status);
        goto out;
    }
    out->access_token = member(o, "access_token", a);
    if (!out->access_token) {
        snprintf(why, why_n, "the answer has no access_token");
        goto out;
    }
    out->refresh_token = member(o, "refresh_token", a);
    out->scope = member(o, "scope", a);
    exp = json_object_get(o, "expires_in");
    if (json_is_integer(exp) && json_integer_value(exp) > 0)
        out->expires_in = json_integer_value(exp);
    else if (json_is_string(exp)) /* some providers quote it */
        out->expires_in = strtoll(json_string_value(exp), NULL, 10);
    if (out->expires_in < 0 || out->expires_in > 100LL * 365 * 86400)
        out->expires_in = 0;
    out->account = member(json_object_get(o, "team"), "name", a); /* Slack tells it here */
    out->account_id = member(json_object_get(o, "team"), "id", a);
    rc = 0;
out:
    json_decref(o);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}
