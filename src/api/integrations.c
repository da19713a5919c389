/* SPDX-License-Identifier: MIT */
/*
 * integrations.c: contract §13. The five providers and the tenant's connection to each,
 * connect (an OAuth authorization code with PKCE), the callback that exchanges the code, and
 * disconnect.
 *
 * DESIGN. The callback is public: the single-use state, kept only as its SHA-256, names the
 * tenant. It is taken (used) in one statement before anything else, so a replayed or raced
 * callback finds nothing. The code is exchanged through httpc off the request threads (the
 * request is deferred), and only a complete answer is stored: the tokens sealed under a key
 * derived from the server secret, in one write. Whatever fails, a connection that existed is
 * kept, and nothing half made is stored. Disconnect forgets the tokens at once and asks the
 * provider to revoke them in the background: a slow or failing provider never holds the API.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/str.h"
#include "../httpc/httpc.h"
#include "../integrations/oauth.h"
#include "../integrations/operations.h"
#include "../integrations/providers.h"

#include <stdlib.h>
#include <string.h>

#define REDIRECT_URI_MAX 2048
/* The sealing key, derived once from the server secret at start (main.c, struct integ_env). */
#define KEY(svc) ((svc)->agent.integ->key)
#define SCOPE_MAX 200
#define EXCHANGE_CONNECT_MS 10000
#define EXCHANGE_TIMEOUT_MS 20000

/* ---- The record ---- */

static const struct integ_provider *find_provider(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = integ_provider_find(r->params[0]);
    if (!p)
        err_set(e, ERR_NOT_FOUND, "provider_not_found", "provider",
                "No provider %.60s: use slack, google_calendar, outlook, github or hubspot.",
                r->params[0]);
    return p;
}

/* The tenant's inbound events URL for 'p' ({public_url}/v1/integrations/{p}/events/<token>). */
static const char *events_url(struct router_req *r, const struct integ_provider *p,
                              const char *token)
{
    const char *base = r->env->cfg->public_url;
    size_t n = strlen(base);
    struct buf b;
    const char *url;
    buf_init(&b, 4096);
    buf_append(&b, base, n > 0 && base[n - 1] == '/' ? n - 1 : n);
    buf_appendf(&b, "/v1/integrations/%s/events/%s", p->id, token);
    url = arena_strdup(r->arena, buf_ptr(&b));
    buf_cleanup(&b);
    return url;
}

/* {provider, name, category, status, configured, account, scopes, connected_at, expires_at,
 * error, events_url, operations}; 'row' NULL: no connection. */
static void write_integration(struct router_req *r, struct jw *w, const struct integ_provider *p,
                              const struct store_integration *row, bool pending, const char *token,
                              const json_t *sec)
{
    const json_t *scopes = json_object_get(sec, "scopes");
    json_t *exp = json_object_get(sec, "expires_at");
    char *scopes_text = json_is_array(scopes) ? json_dumps(scopes, JSON_COMPACT) : NULL;

    jw_obj(w);
    jw_key(w, "provider");
    jw_str(w, p->id);
    jw_key(w, "name");
    jw_str(w, p->name);
    jw_key(w, "category");
    jw_str(w, p->category);
    jw_key(w, "status");
    jw_str(w, row ? row->status : pending ? "pending" : "available");
    jw_key(w, "configured");
    jw_bool(w, integ_configured(r->env->cfg, p));
    jw_key(w, "account");
    jw_str(w, json_string_value(json_object_get(sec, "account")));
    jw_key(w, "scopes");
    jw_raw(w, scopes_text, "[]");
    jw_key(w, "connected_at");
    jw_time(w, row ? row->connected_at : 0);
    jw_key(w, "expires_at");
    jw_time(w, json_is_integer(exp) ? json_integer_value(exp) : 0);
    jw_key(w, "error");
    jw_str(w, row ? row->error : NULL);
    jw_key(w, "events_url");
    jw_str(w, token && p->events != INTEG_EVENTS_NONE ? events_url(r, p, token) : NULL);
    jw_key(w, "operations");
    jw_arr(w);
    for (size_t i = 0; p->operations[i]; i++)
        jw_str(w, p->operations[i]);
    jw_arr_end(w);
    jw_obj_end(w);
    free(scopes_text);
}

/* The tenant's events token, made the first time it is asked for. */
static int tenant_events_token(struct router_req *r, const char **token, struct err *e)
{
    char fresh[INTEG_STATE_LEN + 1];
    if (id_base62(fresh, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (store_events_token(r->store, &r->tenant, fresh, r->arena, token))
        return err_set(e, ERR_STORE, "internal_error", NULL, "events token failed");
    return 0;
}

/* Write the record of 'p' for the tenant as it is now. */
static int write_current(struct router_req *r, struct jw *w, const struct integ_provider *p,
                         const char *token, struct err *e)
{
    struct store_integration row;
    json_t *sec = NULL;
    bool pending = false;
    int rc = store_integration_get(r->store, &r->tenant, p->id, r->arena, &row);
    if (rc && rc != ERR_NOT_FOUND)
        return err_set(e, rc, "internal_error", NULL, "integration read failed");
    if (rc == ERR_NOT_FOUND &&
        store_oauth_state_open(r->store, &r->tenant, p->id, clock_now_ms(), &pending))
        return err_set(e, ERR_STORE, "internal_error", NULL, "state read failed");
    if (!rc && row.secrets) {
        const char *text = integ_open(KEY(api_svc(r)), &r->tenant, p->id, "secrets", row.secrets,
                                      row.secrets_len, r->arena);
        sec = text ? json_loads(text, 0, NULL) : NULL;
    }
    write_integration(r, w, p, rc ? NULL : &row, pending, token, sec);
    json_decref(sec);
    return 0;
}

/* Answer the tenant's record of 'only', or (NULL) the list of the five in the contract's
 * order. */
static int respond_records(struct router_req *r, const struct integ_provider *only, struct err *e)
{
    const char *token = NULL;
    struct buf b;
    struct jw w;
    int rc = tenant_events_token(r, &token, e);

    if (rc)
        return rc;
    buf_init(&b, 64 * 1024);
    jw_init(&w, &b);
    if (only) {
        rc = write_current(r, &w, only, token, e);
    } else {
        jw_obj(&w);
        jw_key(&w, "integrations");
        jw_arr(&w);
        for (size_t i = 0; i < INTEG_PROVIDERS && !rc; i++)
            rc = write_current(r, &w, integ_provider_at(i), token, e);
        jw_arr_end(&w);
        jw_key(&w, "has_more");
        jw_bool(&w, false);
        jw_key(&w, "next_cursor");
        jw_null(&w);
        jw_obj_end(&w);
    }
    if (rc) {
        buf_cleanup(&b);
        return rc;
    }
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/integrations: always the five. */
int api_integrations_list(struct router_req *r, struct err *e)
{
    return respond_records(r, NULL, e);
}

/* ---- Connect ---- */

struct connect_body {
    const char *redirect_uri;
    struct jb_strings scopes;
};

/* A scope: 1..200 printable ASCII characters, no space or comma (they separate scopes). */
static bool scope_ok(const char *s, size_t len)
{
    if (len == 0 || len > SCOPE_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == ',')
            return false;
    }
    return true;
}

static const struct jb_field connect_fields[] = {
    {"redirect_uri", JB_STRING, offsetof(struct connect_body, redirect_uri), 0, 1, REDIRECT_URI_MAX,
     NULL, NULL, NULL},
    {"scopes", JB_STRING_ARRAY, offsetof(struct connect_body, scopes), JB_UNIQUE, 1, 50, NULL,
     scope_ok, "each scope must be 1 to 200 printable ASCII characters without spaces or commas"},
};

const struct jb_binding api_integrations_connect_body = {connect_fields, 2};

/* An absolute http(s) URL with a host, no fragment, no blank or control character. */
static bool redirect_ok(const char *u)
{
    const char *host;
    if (strncmp(u, "https://", 8) == 0)
        host = u + 8;
    else if (strncmp(u, "http://", 7) == 0)
        host = u + 7;
    else
        return false;
    if (!*host || *host == '/' || *host == '?' || *host == ':')
        return false;
    for (const unsigned char *c = (const unsigned char *)u; *c; c++) {
        if (*c <= ' ' || *c == 0x7f || *c == '#')
            return false;
    }
    return true;
}

/* POST /v1/integrations/{provider}/connect {redirect_uri?, scopes?} */
int api_integrations_connect(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    unsigned char h[CRYPTO_SHA256_LEN];
    char state[INTEG_STATE_LEN + 1], verifier[INTEG_VERIFIER_LEN + 1],
        challenge[INTEG_CHALLENGE_LEN + 1];
    struct store_oauth_state st;
    struct connect_body b;
    struct jb_result res;
    struct buf scopes_text, scopes_json;
    struct jw sw;
    const char *url;
    struct jw w;
    struct buf out;
    int64_t now = clock_now_ms();
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, connect_fields, 2, &b, r->arena, &res, e);
    if (rc)
        return rc;
    if (b.redirect_uri && !redirect_ok(b.redirect_uri))
        return err_set(e, ERR_INVALID, "invalid_request", "redirect_uri",
                       "Invalid redirect_uri: must be an absolute http:// or https:// URL with a "
                       "host and no fragment.");
    if (!integ_configured(r->env->cfg, p))
        return err_set(e, ERR_INVALID, "integration_not_configured", "provider",
                       "%s has no OAuth client configured: the operator sets "
                       "WORKFORCE_OAUTH_%s_CLIENT_ID and _CLIENT_SECRET.",
                       p->name, config_oauth_provider_names[p->config_index]);
    if (id_base62(state, INTEG_STATE_LEN) || integ_pkce(verifier, challenge))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");

    /* The scopes asked: the caller's, else the configured or default ones. */
    buf_init(&scopes_text, 64 * 1024);
    buf_init(&scopes_json, 64 * 1024);
    jw_init(&sw, &scopes_json);
    jw_arr(&sw);
    if (JB_HAS(res, 1)) {
        for (size_t i = 0; i < b.scopes.n; i++) {
            buf_appendf(&scopes_text, "%s%s", i ? " " : "", b.scopes.v[i]);
            jw_str(&sw, b.scopes.v[i]);
        }
    } else {
        const char *s = integ_setting(r->env->cfg, p, CONFIG_OAUTH_SCOPES);
        json_t *list = integ_scope_list(s), *v;
        size_t i;
        buf_appends(&scopes_text, s);
        json_array_foreach(list, i, v) jw_str(&sw, json_string_value(v));
        json_decref(list);
    }
    jw_arr_end(&sw);

    memset(&st, 0, sizeof(st));
    crypto_sha256(state, INTEG_STATE_LEN, h);
    crypto_hex(h, sizeof(h), st.state_hash);
    st.tenant = r->tenant;
    st.provider = p->id;
    st.verifier = integ_seal(KEY(api_svc(r)), &r->tenant, p->id, "verifier", verifier, r->arena,
                             &st.verifier_len);
    st.redirect_uri = b.redirect_uri;
    st.scopes = arena_strdup(r->arena, buf_ptr(&scopes_json));
    st.created_at = now;
    st.expires_at = now + INTEG_STATE_TTL_MS;
    url = integ_authorize_url(r->env->cfg, p, buf_ptr(&scopes_text), state, challenge, r->arena);
    buf_cleanup(&scopes_text);
    buf_cleanup(&scopes_json);
    if (!st.verifier)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "sealing failed");
    rc = store_oauth_state_create(r->store, &st);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "state write failed");

    buf_init(&out, 128 * 1024);
    jw_init(&w, &out);
    jw_obj(&w);
    jw_key(&w, "provider");
    jw_str(&w, p->id);
    jw_key(&w, "status");
    jw_str(&w, "pending");
    jw_key(&w, "authorization_url");
    jw_str(&w, url);
    jw_key(&w, "state");
    jw_str(&w, state);
    jw_key(&w, "expires_at");
    jw_time(&w, st.expires_at);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &out, e);
}

/* ---- Callback ---- */

/* A code being exchanged; owned by the exchange from the handler's return to finish(). */
struct exchange {
    struct router_req *r; /* valid until router_async_finish() */
    const struct api_services *svc;
    const struct integ_provider *p;
    struct store_tenant tenant;
    char *redirect_uri; /* NULL: answer a page */
    char *scopes;       /* JSON array asked */
    struct buf body;
    long status;
    bool too_big;
    struct arena arena;     /* what the exchange got lives here */
    struct integ_token got; /* the token answer, once parsed */
};

/* The user goes back to 'redirect_uri' with the outcome, or sees a short page. */
static void send_back(struct router_req *r, const struct integ_provider *p,
                      const char *redirect_uri, const char *error)
{
    struct buf b;
    char *body;
    size_t len;

    buf_init(&b, 16 * 1024);
    if (redirect_uri) {
        struct buf loc;
        buf_init(&loc, 16 * 1024);
        buf_appends(&loc, redirect_uri);
        buf_appends(&loc, strchr(redirect_uri, '?') ? "&" : "?");
        buf_appendf(&loc, "provider=%s&status=%s", p->id, error ? "error" : "connected");
        if (error) {
            buf_appends(&loc, "&error=");
            buf_append_urlenc(&loc, error);
        }
        http_resp_header(r->http, "Location", buf_ptr(&loc));
        buf_appendf(&b, "<!doctype html><title>Redirecting</title><p>Redirecting.</p>\n");
        buf_cleanup(&loc);
        body = buf_take(&b, &len);
        router_respond_raw(r, 302, "text/html; charset=utf-8", body, len);
        return;
    }
    buf_appendf(&b,
                "<!doctype html><meta charset=\"utf-8\"><title>%s connected</title>"
                "<p>%s is connected. You can close this window.</p>\n",
                p->name, p->name);
    body = buf_take(&b, &len);
    router_respond_raw(r, 200, "text/html; charset=utf-8", body, len);
}

/* The connection failed with 'code': kept as the record's error unless one was connected. */
static void record_failure(struct store *s, const struct store_tenant *t,
                           const struct integ_provider *p, const char *code, struct arena *a)
{
    struct store_integration row;
    int rc = store_integration_get(s, t, p->id, a, &row);
    if (!rc && strcmp(row.status, "connected") == 0)
        return; /* a failed reconnection leaves the working one */
    memset(&row, 0, sizeof(row));
    row.provider = p->id;
    row.status = "error";
    row.error = code;
    row.updated_at = clock_now_ms();
    if (store_integration_put(s, t, &row))
        log_warn("integrations: cannot record the failed connection to %s", p->id);
}

/* End the callback: the outcome to the user, then the request resumes. */
static void finish(struct exchange *x, const char *error, const char *why, bool upstream)
{
    struct router_req *r = x->r;
    if (error && !x->redirect_uri) {
        struct err e;
        if (upstream)
            err_set(&e, ERR_UPSTREAM, "upstream_error", NULL, "The connection to %s failed: %.300s",
                    x->p->name, why);
        else
            err_set(&e, ERR_INVALID, "invalid_request", "error",
                    "The connection to %s was not made: %.300s", x->p->name, why);
        router_async_finish(r, upstream ? ERR_UPSTREAM : ERR_INVALID, &e);
    } else {
        send_back(r, x->p, x->redirect_uri, error);
        router_async_finish(r, 0, NULL);
    }
}

static void exchange_free(struct exchange *x)
{
    buf_cleanup(&x->body);
    arena_cleanup(&x->arena);
    free(x->redirect_uri);
    free(x->scopes);
    free(x);
}

static int exchange_data(void *ud, long status, const char *p, size_t n)
{
    struct exchange *x = ud;
    x->status = status;
    if (buf_len(&x->body) + n > INTEG_TOKEN_RESPONSE_MAX) {
        x->too_big = true;
        return 1; /* no token answer is this large */
    }
    buf_append(&x->body, p, n);
    return 0;
}

/* The granted scopes as a JSON array: the answer's 'scope' when it says, else those asked. */
static char *granted_scopes(const char *scope, const char *asked)
{
    json_t *arr;
    char *out;
    if (!scope)
        return xstrdup(asked);
    arr = integ_scope_list(scope);
    out = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return out;
}

/* Store the whole connection from what the exchange got; 0, or a code and reason. */
static int store_connection(struct exchange *x, struct store *s, struct arena *a, char *code,
                            size_t code_n, char *reason, size_t reason_n)
{
    struct store_integration row;
    char *scopes = granted_scopes(x->got.scope, x->scopes);
    json_t *sec = json_object();
    int64_t now = clock_now_ms();
    char *text;
    int rc;

    json_object_set_new(sec, "access_token", json_string(x->got.access_token));
    if (x->got.refresh_token)
        json_object_set_new(sec, "refresh_token", json_string(x->got.refresh_token));
    json_object_set_new(sec, "expires_at",
                        json_integer(x->got.expires_in ? now + x->got.expires_in * 1000 : 0));
    json_object_set_new(sec, "scopes", json_loads(scopes ? scopes : "[]", 0, NULL));
    if (x->got.account)
        json_object_set_new(sec, "account", json_string(x->got.account));
    text = json_dumps(sec, JSON_COMPACT);
    json_decref(sec);
    free(scopes);
    memset(&row, 0, sizeof(row));
    row.provider = x->p->id;
    row.status = "connected";
    row.connected_at = now;
    row.updated_at = now;
    rc = 0;
    if (text)
        row.secrets =
            integ_seal(KEY(x->svc), &x->tenant, x->p->id, "secrets", text, a, &row.secrets_len);
    if (text) {
        memset(text, 0, strlen(text));
        free(text);
    }
    rc = !row.secrets ? ERR_INTERNAL : store_integration_put(s, &x->tenant, &row);
    if (rc) {
        snprintf(code, code_n, "internal_error");
        snprintf(reason, reason_n, "the connection could not be stored");
    }
    return rc;
}

/* The end of a callback that got this far: the connection stored, or the failure noted;
 * the user told; 'x' freed. */
static void conclude(struct exchange *x, int rc, char *code, size_t code_n, char *reason,
                     size_t reason_n)
{
    struct store *s = store_pool_get(x->svc->router.pool);
    struct arena a;

    arena_init(&a);
    if (!rc)
        rc = store_connection(x, s, &a, code, code_n, reason, reason_n);
    if (rc) {
        log_warn("integrations: connecting %s for %s failed: %s (%s)", x->p->id, x->tenant.org_id,
                 code, reason);
        record_failure(s, &x->tenant, x->p, code, &a);
    } else {
        log_info("integrations: %s connected for %s", x->p->id, x->tenant.org_id);
    }
    store_pool_put(x->svc->router.pool, s);
    finish(x, rc ? code : NULL, reason, true);
    arena_cleanup(&a);
    exchange_free(x);
}

/* The account lookup answered (or did not): its name when it tells it; never a failure. */
static void who_done(void *ud, int rc, long status, const char *why)
{
    struct exchange *x = ud;
    char code[64] = "", reason[512] = "";
    if (status)
        x->status = status;
    if (!rc && x->status >= 200 && x->status <= 299) {
        json_t *o = json_loadb(buf_ptr(&x->body), buf_len(&x->body), 0, NULL);
        const char *name = json_string_value(json_object_get(o, x->p->whoami_field));
        if (name && *name)
            x->got.account = arena_strdup(&x->arena, name);
        json_decref(o);
    } else {
        log_info("integrations: the %s account name is unknown (%s, HTTP %ld)", x->p->id,
                 rc ? (why ? why : "no answer") : "refused", x->status);
    }
    conclude(x, 0, code, sizeof(code), reason, sizeof(reason));
}

/* Ask the provider whose account the token is (GitHub's login, Google's email, ...). */
static void ask_who(struct exchange *x)
{
    const struct config *c = x->svc->router.cfg;
    const char *path = x->p->whoami_path, *tok = strstr(path, "{token}");
    const char *headers[2];
    struct httpc_request req;
    struct buf url, auth;

    buf_init(&url, 64 * 1024);
    buf_init(&auth, 64 * 1024);
    buf_appends(&url, integ_setting(c, x->p, CONFIG_OAUTH_API_URL));
    if (tok) {
        buf_append(&url, path, (size_t)(tok - path));
        buf_append_urlenc(&url, x->got.access_token);
        buf_appends(&url, tok + 7);
    } else {
        buf_appends(&url, path);
    }
    buf_appendf(&auth, "Authorization: Bearer %s", x->got.access_token);
    headers[0] = buf_ptr(&auth);
    headers[1] = "Accept: application/json";
    memset(&req, 0, sizeof(req));
    req.method = "GET";
    req.url = buf_ptr(&url);
    req.headers = headers;
    req.nheaders = 2;
    req.connect_timeout_ms = EXCHANGE_CONNECT_MS;
    req.timeout_ms = EXCHANGE_TIMEOUT_MS;
    buf_reset(&x->body);
    x->status = 0;
    x->too_big = false;
    httpc_start(x->svc->httpc, &req, exchange_data, who_done, x); /* copies what it keeps */
    buf_cleanup(&url);
    buf_cleanup(&auth);
}

/* The token endpoint answered (or did not): the account name asked for next where the
 * answer does not tell it; then a whole connection stored, or nothing. */
static void exchange_done(void *ud, int rc, long status, const char *why)
{
    struct exchange *x = ud;
    char code[64], reason[512];

    if (status)
        x->status = status;
    if (rc && !x->too_big) {
        snprintf(code, sizeof(code), "provider_unreachable");
        snprintf(reason, sizeof(reason), "the token endpoint did not answer (%s)",
                 why ? why : "no answer");
    } else {
        rc = integ_token_parse(x->status, buf_ptr(&x->body),
                               x->too_big ? INTEG_TOKEN_RESPONSE_MAX + 1 : buf_len(&x->body),
                               &x->arena, &x->got, code, sizeof(code), reason, sizeof(reason));
    }
    if (!rc && !x->got.account && x->p->whoami_path) {
        ask_who(x); /* who_done() concludes */
        return;
    }
    conclude(x, rc, code, sizeof(code), reason, sizeof(reason));
}

/* GET /v1/integrations/{provider}/callback?code&state (or ?error&state): no API key. */
int api_integrations_callback(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    const char *state = router_query(r, "state"), *code = router_query(r, "code");
    const char *error = router_query(r, "error");
    unsigned char h[CRYPTO_SHA256_LEN];
    char hash[2 * CRYPTO_SHA256_LEN + 1];
    const char *headers[2] = {"Content-Type: application/x-www-form-urlencoded",
                              "Accept: application/json"};
    struct store_oauth_state st;
    struct httpc_request req;
    struct exchange *x;
    const char *verifier;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    if (!state || !*state)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "The callback has no state: it does not come from a connect.");
    crypto_sha256(state, strlen(state), h);
    crypto_hex(h, sizeof(h), hash);
    rc = store_oauth_state_take(r->store, hash, p->id, clock_now_ms(), r->arena, &st);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "Invalid state: unknown, already used, expired, or of another provider. "
                       "Start again with POST /v1/integrations/%s/connect.",
                       p->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "state read failed");

    if (error || !code || !*code) {
        /* The user said no, or the provider sent no code: nothing to exchange. */
        char oauth_error[64];
        struct arena a;
        snprintf(oauth_error, sizeof(oauth_error), "%s", error ? error : "invalid_request");
        for (char *c = oauth_error; *c; c++) /* an OAuth error code is [a-z_] */
            if (!((*c >= 'a' && *c <= 'z') || *c == '_'))
                *c = '_';
        arena_init(&a);
        record_failure(r->store, &st.tenant, p, oauth_error, &a);
        arena_cleanup(&a);
        if (st.redirect_uri) {
            send_back(r, p, st.redirect_uri, oauth_error);
            return 0;
        }
        return err_set(e, ERR_INVALID, "invalid_request", "error",
                       "The connection to %s was not made: %s.", p->name,
                       error ? oauth_error : "the provider sent no code");
    }
    verifier = integ_open(KEY(api_svc(r)), &st.tenant, p->id, "verifier", st.verifier,
                          st.verifier_len, r->arena);
    if (!verifier)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the state does not open");

    x = xcalloc(1, sizeof(*x));
    x->r = r;
    x->svc = api_svc(r);
    x->p = p;
    x->tenant = st.tenant;
    x->redirect_uri = st.redirect_uri ? xstrdup(st.redirect_uri) : NULL;
    x->scopes = xstrdup(st.scopes ? st.scopes : "[]");
    buf_init(&x->body, INTEG_TOKEN_RESPONSE_MAX + 1);
    arena_init(&x->arena);
    r->async = true;
    http_req_defer(r->http);
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.url = integ_setting(r->env->cfg, p, CONFIG_OAUTH_TOKEN_URL);
    req.headers = headers;
    req.nheaders = 2;
    req.body = integ_code_form(r->env->cfg, p, code, verifier, r->arena);
    req.body_len = strlen(req.body);
    req.connect_timeout_ms = EXCHANGE_CONNECT_MS;
    req.timeout_ms = EXCHANGE_TIMEOUT_MS;
    /* From here 'r' belongs to the exchange: exchange_done() may run before this returns. */
    httpc_start(api_svc(r)->httpc, &req, exchange_data, exchange_done, x);
    return 0;
}

/* ---- Disconnect ---- */

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

/* Ask the provider to revoke 'token' (of 'hint' kind), in the background. */
static void revoke(struct router_req *r, const struct integ_provider *p, const char *token,
                   const char *hint)
{
    const struct config *c = r->env->cfg;
    const char *url = integ_setting(c, p, CONFIG_OAUTH_REVOKE_URL);
    const char *form_headers[2] = {"Content-Type: application/x-www-form-urlencoded",
                                   "Accept: application/json"};
    const char *json_headers[3] = {"Content-Type: application/json",
                                   "Accept: application/vnd.github+json", NULL};
    struct httpc_request req;
    struct buf b, u;

    if (!*url || p->revoke == INTEG_REVOKE_NONE)
        return;
    memset(&req, 0, sizeof(req));
    buf_init(&b, 64 * 1024);
    buf_init(&u, 64 * 1024);
    req.connect_timeout_ms = EXCHANGE_CONNECT_MS;
    req.timeout_ms = EXCHANGE_TIMEOUT_MS;
    switch (p->revoke) {
    case INTEG_REVOKE_FORM: /* RFC 7009 */
        buf_appends(&b, "token=");
        buf_append_urlenc(&b, token);
        buf_appendf(&b, "&token_type_hint=%s&client_id=", hint);
        buf_append_urlenc(&b, integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
        buf_appends(&b, "&client_secret=");
        buf_append_urlenc(&b, integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET));
        buf_appends(&u, url);
        req.method = "POST";
        req.headers = form_headers;
        req.nheaders = 2;
        break;
    case INTEG_REVOKE_GITHUB: { /* DELETE /applications/{client_id}/token, basic auth */
        struct buf cred;
        char *b64;
        size_t n;
        json_t *o = json_pack("{ss}", "access_token", token);
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        buf_appends(&b, text ? text : "{}");
        free(text);
        buf_appendf(&u, "%s/", url);
        buf_append_urlenc(&u, integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID));
        buf_appends(&u, "/token");
        buf_init(&cred, 4096);
        buf_appendf(&cred, "%s:%s", integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID),
                    integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET));
        n = buf_len(&cred);
        b64 = xmalloc(4 * n / 3 + 8);
        crypto_base64((const unsigned char *)buf_ptr(&cred), n, b64);
        buf_reset(&cred);
        buf_appendf(&cred, "Authorization: Basic %s", b64);
        json_headers[2] = arena_strdup(r->arena, buf_ptr(&cred));
        buf_cleanup(&cred);
        free(b64);
        req.method = "DELETE";
        req.headers = json_headers;
        req.nheaders = 3;
        break;
    }
    case INTEG_REVOKE_HUBSPOT: /* DELETE /oauth/v1/refresh-tokens/{token} */
        if (strcmp(hint, "refresh_token") != 0)
            goto out;
        buf_appendf(&u, "%s/", url);
        buf_append_urlenc(&u, token);
        req.method = "DELETE";
        break;
    default:
        goto out;
    }
    req.url = buf_ptr(&u);
    req.body = buf_len(&b) ? buf_ptr(&b) : NULL;
    req.body_len = buf_len(&b);
    httpc_start(api_svc(r)->httpc, &req, revoke_data, revoke_done, xstrdup(p->id));
out:
    buf_cleanup(&b);
    buf_cleanup(&u);
}

/* DELETE /v1/integrations/{provider}: forget the tokens now, revoke them in the background;
 * answers the integration, available (also when it was not connected). */
int api_integrations_disconnect(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct store_integration row;
    const char *text = NULL;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    rc = store_integration_get(r->store, &r->tenant, p->id, r->arena, &row);
    if (rc && rc != ERR_NOT_FOUND)
        return err_set(e, rc, "internal_error", NULL, "integration read failed");
    if (!rc && row.secrets)
        text = integ_open(KEY(api_svc(r)), &r->tenant, p->id, "secrets", row.secrets,
                          row.secrets_len, r->arena);
    rc = store_integration_delete(r->store, &r->tenant, p->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "integration delete failed");
    if (text) {
        json_t *t = json_loads(text, 0, NULL);
        const char *refresh = json_string_value(json_object_get(t, "refresh_token"));
        const char *access = json_string_value(json_object_get(t, "access_token"));
        if (refresh)
            revoke(r, p, refresh, "refresh_token");
        if (access && (p->revoke == INTEG_REVOKE_FORM || p->revoke == INTEG_REVOKE_GITHUB))
            revoke(r, p, access, "access_token");
        json_decref(t);
    }
    return respond_records(r, p, e);
}

/* ---- Inbound events ---- */

#define SLACK_TOLERANCE_S 300 /* Slack's 5 minutes */

/* Whether 'got' is "<prefix><hex of HMAC-SHA256(secret, msg)>", in constant time. */
static bool signature_ok(const char *got, const char *prefix, const char *secret, const char *msg,
                         size_t len)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    char want[80];
    size_t p = strlen(prefix);

    if (!got || !*secret || crypto_hmac_sha256(secret, strlen(secret), msg, len, mac))
        return false;
    memcpy(want, prefix, p);
    crypto_hex(mac, sizeof(mac), want + p);
    return strlen(got) == strlen(want) && crypto_equal(got, want, strlen(want));
}

static int bad_signature(struct err *e, const char *why)
{
    return err_set(e, ERR_AUTH, "invalid_signature", NULL, "%s", why);
}

/* Slack: v0 = HMAC-SHA256 of "v0:<timestamp>:<body>" with the signing secret, the timestamp
 * within 5 minutes. '*name' is the event's name ("slack.<event.type>"), or NULL when nothing
 * is to start; '*answer' what to answer instead of the runs (the url_verification challenge). */
static int slack_event(struct router_req *r, const char *secret, const char *body, size_t len,
                       const char **name, const char **id, json_t **answer, struct err *e)
{
    const char *ts = http_req_header(r->http, "X-Slack-Request-Timestamp");
    const char *sig = http_req_header(r->http, "X-Slack-Signature");
    const char *type = json_string_value(json_object_get(r->body, "type"));
    json_t *event = json_object_get(r->body, "event");
    int64_t t = 0, now = clock_now_ms() / 1000;
    struct buf base;
    bool ok;

    if (!ts || str_to_i64(str_c(ts), &t) || t < now - SLACK_TOLERANCE_S ||
        t > now + SLACK_TOLERANCE_S)
        return bad_signature(e, "X-Slack-Request-Timestamp is missing or more than 5 minutes "
                                "away: a replay, or a clock out of step.");
    buf_init(&base, len + 64);
    buf_appendf(&base, "v0:%s:", ts);
    buf_append(&base, body, len);
    ok = signature_ok(sig, "v0=", secret, buf_ptr(&base), buf_len(&base));
    buf_cleanup(&base);
    if (!ok)
        return bad_signature(e, "X-Slack-Signature does not match the body.");
    if (type && strcmp(type, "url_verification") == 0) {
        *answer = json_pack("{ss}", "challenge",
                            json_string_value(json_object_get(r->body, "challenge"))
                                ? json_string_value(json_object_get(r->body, "challenge"))
                                : "");
        return 0;
    }
    if (!type || strcmp(type, "event_callback") != 0 || !json_is_object(event) ||
        !json_string_value(json_object_get(event, "type")))
        return 0; /* verified, but nothing a workflow listens to */
    /* The bot's own messages come back as events: they start nothing (no loops). */
    if (json_object_get(event, "bot_id") ||
        (json_string_value(json_object_get(event, "subtype")) &&
         strcmp(json_string_value(json_object_get(event, "subtype")), "bot_message") == 0))
        return 0;
    {
        struct buf n;
        buf_init(&n, 256);
        buf_appendf(&n, "slack.%.100s", json_string_value(json_object_get(event, "type")));
        *name = arena_strdup(r->arena, buf_ptr(&n));
        buf_cleanup(&n);
    }
    *id = json_string_value(json_object_get(r->body, "event_id"));
    return 0;
}

/* GitHub: X-Hub-Signature-256 = "sha256=" + HMAC-SHA256 of the body with the webhook secret;
 * the name is "github.<X-GitHub-Event>[.<action>]". A ping starts nothing. */
static int github_event(struct router_req *r, const char *secret, const char *body, size_t len,
                        const char **name, const char **id, struct err *e)
{
    const char *sig = http_req_header(r->http, "X-Hub-Signature-256");
    const char *kind = http_req_header(r->http, "X-GitHub-Event");
    const char *action = json_string_value(json_object_get(r->body, "action"));
    struct buf n;

    if (!signature_ok(sig, "sha256=", secret, body, len))
        return bad_signature(e, "X-Hub-Signature-256 is missing or does not match the body.");
    if (!kind || !*kind || strcmp(kind, "ping") == 0)
        return 0;
    buf_init(&n, 256);
    buf_appendf(&n, "github.%.60s", kind);
    if (action && *action)
        buf_appendf(&n, ".%.60s", action);
    *name = arena_strdup(r->arena, buf_ptr(&n));
    buf_cleanup(&n);
    *id = http_req_header(r->http, "X-GitHub-Delivery");
    return 0;
}

/*
 * POST /v1/integrations/{provider}/events/{token}: an event the provider sends (no API key:
 * the token names the organization and mode, the provider's signature proves the sender).
 * A verified event starts every enabled workflow of the tenant triggered by its name, with
 * the payload as trigger data; a delivery seen before starts nothing again.
 */
int api_integrations_events(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = integ_provider_find(r->params[0]);
    const char *name = NULL, *id = NULL, *secret;
    struct store_workflow *wfs = NULL;
    json_t *answer = NULL, *runs;
    size_t len = 0, n = 0;
    const char *body;
    bool first = true;
    int rc;

    if (!p || p->events == INTEG_EVENTS_NONE)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "No such route: POST %.200s.",
                       http_req_path(r->http));
    secret = integ_setting(r->env->cfg, p, CONFIG_OAUTH_SIGNING_SECRET);
    if (!*secret)
        return err_set(e, ERR_INVALID, "integration_not_configured", "provider",
                       "Events from %s cannot be verified: the operator sets "
                       "WORKFORCE_OAUTH_%s_SIGNING_SECRET.",
                       p->name, config_oauth_provider_names[p->config_index]);
    body = http_req_body(r->http, &len);
    rc = p->events == INTEG_EVENTS_SLACK ? slack_event(r, secret, body, len, &name, &id, &answer, e)
                                         : github_event(r, secret, body, len, &name, &id, e);
    if (rc)
        return rc;
    if (answer) {
        router_respond(r, answer);
        return 0;
    }
    if (name && id && *id) {
        rc = store_delivery_note(r->store, &r->tenant, p->id, id, clock_now_ms(), &first);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "delivery note failed");
    }
    if (name && first) {
        rc = store_workflows_for_event(r->store, &r->tenant, name, r->arena, &wfs, &n);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "workflow read failed");
    }
    runs = json_array();
    for (size_t i = 0; i < n; i++) {
        struct store_wf_run queued;
        struct err qe;
        err_clear(&qe);
        if (api_workflow_queue(r, &wfs[i], "integration", name, r->body, &queued, &qe) == 0)
            json_array_append_new(runs, json_string(queued.id));
        else
            log_warn("integrations: event %s did not start workflow %s: %s", name, wfs[i].id,
                     qe.msg);
    }
    router_respond(r,
                   json_pack("{s:s?,s:b,s:o}", "event", name, "duplicate", !first, "runs", runs));
    return 0;
}
