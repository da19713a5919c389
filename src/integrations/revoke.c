/* SPDX-License-Identifier: MIT */
/*
 * revoke.c: disconnecting a tenant from a provider (see connection.h). The tokens are
 * forgotten at once and the provider is asked to revoke them in the background, each in the
 * way it takes (providers.h, enum integ_revoke): a slow or failing provider never holds the
 * caller, and its answer is only logged (never a token).
 */
#include "connection.h"

#include "../core/buf.h"
#include "../core/crypto.h"
#include "../core/log.h"
#include "../httpc/httpc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define REVOKE_CONNECT_MS 10000
#define REVOKE_TIMEOUT_MS 20000

/* "Authorization: Basic <base64 of client_id:client_secret>" of 'p' ('a'). */
static const char *basic_auth(const struct config *c, const struct integ_provider *p,
                              struct arena *a)
{
    struct buf cred;
    const char *line;
    char *b64;
    size_t n;

    buf_init(&cred, 4096);
    buf_appendf(&cred, "%s:%s", integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID),
                integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET));
    n = buf_len(&cred);
    b64 = xmalloc(4 * n / 3 + 8);
    crypto_base64((const unsigned char *)buf_ptr(&cred), n, b64);
    buf_reset(&cred);
    buf_appendf(&cred, "Authorization: Basic %s", b64);
    line = arena_strdup(a, buf_ptr(&cred));
    memset(b64, 0, strlen(b64));
    free(b64);
    buf_cleanup(&cred);
    return line;
}

/* RFC 7009: POST token=<token>&token_type_hint=<hint> with the client's credentials. */
static void revoke_form(const struct config *c, const struct integ_provider *p, const char *url,
                        const char *token, const char *hint, struct buf *body, struct buf *u,
                        struct arena *a, struct httpc_request *out)
{
    const char **headers = arena_alloc(a, 2 * sizeof(*headers));

    headers[0] = "Content-Type: application/x-www-form-urlencoded";
    headers[1] = "Accept: application/json";
    buf_appends(body, "token=");
    buf_append_urlenc(body, token);
    buf_appendf(body, "&token_type_hint=%s&client_id=", hint);
    buf_append_urlenc(body, integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
    buf_appends(body, "&client_secret=");
    buf_append_urlenc(body, integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET));
    buf_appends(u, url);
    out->method = "POST";
    out->headers = headers;
    out->nheaders = 2;
}

/* GitHub: DELETE {url}/{client_id}/token {"access_token": ...}, basic client auth. */
static void revoke_github(const struct config *c, const struct integ_provider *p, const char *url,
                          const char *token, struct buf *body, struct buf *u, struct arena *a,
                          struct httpc_request *out)
{
    const char **headers = arena_alloc(a, 3 * sizeof(*headers));
    json_t *o = json_pack("{ss}", "access_token", token);
    char *text = json_dumps(o, JSON_COMPACT);

    json_decref(o);
    buf_appends(body, text ? text : "{}");
    free(text);
    buf_appendf(u, "%s/", url);
    buf_append_urlenc(u, integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
    buf_appends(u, "/token");
    headers[0] = "Content-Type: application/json";
    headers[1] = "Accept: application/vnd.github+json";
    headers[2] = basic_auth(c, p, a);
    out->method = "DELETE";
    out->headers = headers;
    out->nheaders = 3;
}

/*
 * See connection.h. 'hint' is "access_token" or "refresh_token"; '*out' (its URL, body and
 * headers in 'a') is ready for httpc_start(). ERR_NOT_FOUND, '*out' untouched, when 'p' has no
 * revocation endpoint or takes no revocation of a token of that kind (HubSpot: refresh tokens
 * only); ERR_INVALID when a part of the path would not be one segment ("..": nothing is sent).
 */
int integ_revoke_request(const struct config *c, const struct integ_provider *p, const char *token,
                         const char *hint, struct arena *a, struct httpc_request *out)
{
    const char *url = integ_setting(c, p, CONFIG_OAUTH_REVOKE_URL);
    struct httpc_request req;
    struct buf b, u;
    int rc = 0;

    if (!*url || p->revoke == INTEG_REVOKE_NONE)
        return ERR_NOT_FOUND;
    memset(&req, 0, sizeof(req));
    buf_init(&b, 64 * 1024);
    buf_init(&u, 64 * 1024);
    req.connect_timeout_ms = REVOKE_CONNECT_MS;
    req.timeout_ms = REVOKE_TIMEOUT_MS;
    switch (p->revoke) {
    case INTEG_REVOKE_FORM:
        revoke_form(c, p, url, token, hint, &b, &u, a, &req);
        break;
    case INTEG_REVOKE_GITHUB:
        if (!integ_segment_ok(integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID), 1024, NULL)) {
            rc = ERR_INVALID; /* the client id is a segment of the path */
            break;
        }
        revoke_github(c, p, url, token, &b, &u, a, &req);
        break;
    case INTEG_REVOKE_HUBSPOT: /* DELETE {url}/<refresh token> */
        if (strcmp(hint, "refresh_token") != 0) {
            rc = ERR_NOT_FOUND;
            break;
        }
        if (!integ_segment_ok(token, 4096, NULL)) {
            rc = ERR_INVALID; /* not a token that can be a segment of the path: nothing sent */
            break;
        }
        buf_appendf(&u, "%s/", url);
        buf_append_urlenc(&u, token);
        req.method = "DELETE";
        break;
    default:
        rc = ERR_NOT_FOUND;
        break;
    }
    if (!rc) {
        req.url = arena_strdup(a, buf_ptr(&u));
        req.body = buf_len(&b) ? arena_strdup(a, buf_ptr(&b)) : NULL;
        req.body_len = buf_len(&b);
        *out = req;
    }
    buf_cleanup(&b);
    buf_cleanup(&u);
    return rc;
}

static int revoke_data(void *ud, long status, const char *p, size_t n)
{
    (void)ud;
    (void)status;
    (void)p;
    (void)n;
    return 0;
}

static void revoke_done(void *ud, int rc, long status, const char *why)
{
    char *provider = ud;
    if (rc || status < 200 || status > 299)
        log_warn("integrations: revoking a %s token: %s (HTTP %ld)", provider,
                 rc ? (why ? why : "no answer") : "refused", status);
    else
        log_info("integrations: a %s token was revoked", provider);
    free(provider);
}

/* Ask 'p' to revoke 'token' (of 'hint' kind) in the background, where it takes it. */
static void revoke(const struct integ_env *env, const struct integ_provider *p, const char *token,
                   const char *hint, struct arena *a)
{
    struct httpc_request req;
    if (integ_revoke_request(env->cfg, p, token, hint, a, &req) == 0)
        httpc_start(env->httpc, &req, revoke_data, revoke_done, xstrdup(p->id));
}

/* Have the tokens of the sealed secrets 'text' revoked: the refresh token, and the access
 * token where the provider revokes one. */
static void revoke_tokens(const struct integ_env *env, const struct integ_provider *p,
                          const char *text, struct arena *a)
{
    json_t *t = json_loads(text, 0, NULL);
    const char *refresh = json_string_value(json_object_get(t, "refresh_token"));
    const char *access = json_string_value(json_object_get(t, "access_token"));
    if (refresh)
        revoke(env, p, refresh, "refresh_token", a);
    if (access && (p->revoke == INTEG_REVOKE_FORM || p->revoke == INTEG_REVOKE_GITHUB))
        revoke(env, p, access, "access_token", a);
    json_decref(t);
}

/*
 * See connection.h. Also when the tenant was not connected. Errors in 'e': the store's code
 * (nothing forgotten when the read failed), or those of integ_view_get().
 */
int integ_disconnect(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                     const struct integ_provider *p, struct arena *a, struct integ_view *out,
                     struct err *e)
{
    struct store_integration row;
    const char *text = NULL;
    int rc = store_integration_get(s, t, p->id, a, &row);

    if (rc && rc != ERR_NOT_FOUND)
        return err_set(e, rc, "internal_error", NULL, "integration read failed");
    if (!rc && row.secrets)
        text = integ_open(env->key, t, p->id, "secrets", row.secrets, row.secrets_len, a);
    rc = store_integration_delete(s, t, p->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "integration delete failed");
    if (text)
        revoke_tokens(env, p, text, a);
    return integ_view_get(env, s, t, p, a, out, e);
}
