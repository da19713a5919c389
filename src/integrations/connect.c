/* SPDX-License-Identifier: MIT */
/*
 * connect.c: connecting a tenant to a provider (see connection.h): an OAuth authorization code
 * with PKCE, started by integ_connect_start() and ended by the provider's redirect to the
 * callback, integ_connect_finish().
 *
 * DESIGN. The flow is bound to one browser. POST /connect answers the URL of this server's start
 * page and a cookie (workforce_oauth, HttpOnly, SameSite=Lax, Path /v1/integrations/<p>/) whose
 * SHA-256 the state keeps; a browser that holds it (the console, which called /connect) goes on
 * to the provider at once. A browser without it (an API client's user, or someone a link was
 * sent to) is first shown whose organization the connection is for, and gets its own cookie
 * only by confirming on that page; once a browser went on, no other can. The callback is
 * public: the single-use state, kept only as its SHA-256, names the tenant, and the cookie must
 * be the state's, so a provider's link forwarded to someone else connects nothing. The state
 * is taken (used) in one statement before anything else, so a replayed or raced callback finds
 * nothing. The code is exchanged through httpc off the request threads (the
 * caller's waiter is told to defer, then told the outcome from httpc's thread), and where the
 * token answer does not name the account, the provider is asked whose it is (never a reason to
 * fail). Only a complete answer is stored: the tokens sealed under the key derived from the
 * server secret, in one write. Whatever fails, a connection that existed is kept, and nothing
 * half made is stored; the failure is kept as the record's error otherwise.
 */
#include "connection.h"
#include "inbound.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../httpc/httpc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXCHANGE_CONNECT_MS 10000
#define EXCHANGE_TIMEOUT_MS 20000

/* ---- Start ---- */

/* The scopes asked, as the provider's space-separated text into 'text' and as a new JSON array
 * (the caller owns it): 'scopes' when given, else the configured or default ones. */
static json_t *scopes_asked(const struct config *c, const struct integ_provider *p,
                            const char *const *scopes, size_t nscopes, struct buf *text)
{
    const char *s;
    json_t *list;

    if (scopes) {
        list = json_array();
        for (size_t i = 0; i < nscopes; i++) {
            buf_appendf(text, "%s%s", i ? " " : "", scopes[i]);
            json_array_append_new(list, json_string(scopes[i]));
        }
        return list;
    }
    s = integ_setting(c, p, CONFIG_OAUTH_SCOPES);
    buf_appends(text, s);
    return integ_scope_list(s);
}

/* The hex SHA-256 of 'text' into 'out'. */
static void hash_hex(const char *text, char out[2 * CRYPTO_SHA256_LEN + 1])
{
    unsigned char h[CRYPTO_SHA256_LEN];
    crypto_sha256(text, strlen(text), h);
    crypto_hex(h, sizeof(h), out);
}

/* Whether the browser's cookie 'cookie' (NULL: none) is the one state 'st' is bound to. */
static bool bound(const struct store_oauth_state *st, const char *cookie)
{
    char h[2 * CRYPTO_SHA256_LEN + 1];
    if (!cookie || !*cookie || strlen(st->binding_hash) != sizeof(h) - 1)
        return false;
    hash_hex(cookie, h);
    return crypto_equal(h, st->binding_hash, sizeof(h) - 1);
}

/* {public_url}/v1/integrations/{provider}/authorize?state=<state> ('a'). */
static const char *start_url(const struct config *c, const struct integ_provider *p,
                             const char *state, struct arena *a)
{
    size_t n = strlen(c->public_url);
    const char *url;
    struct buf b;
    buf_init(&b, 64 * 1024);
    buf_append(&b, c->public_url, n > 0 && c->public_url[n - 1] == '/' ? n - 1 : n);
    buf_appendf(&b, "/v1/integrations/%s/authorize?state=%s", p->id, state);
    url = arena_strdup(a, buf_ptr(&b));
    buf_cleanup(&b);
    return url;
}

/*
 * See connection.h. Makes a single-use state bound to tenant 't', 'p' and 'redirect_uri' (NULL:
 * the callback answers a page; else checked by integ_redirect_uri() and kept percent-encoded),
 * valid INTEG_STATE_TTL_MS, with a PKCE verifier sealed in it and bound to the browser cookie
 * 'out->binding' (a caller that is that browser keeps it), and fills '*out' (the URL of this
 * server's start page, in 'a'). Errors in 'e': ERR_INVALID invalid_request "redirect_uri",
 * ERR_INVALID integration_not_configured (no client credentials for 'p'), ERR_INTERNAL (no
 * random bytes, sealing failed), the store's code.
 */
int integ_connect_start(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const char *redirect_uri,
                        const char *const *scopes, size_t nscopes, struct arena *a,
                        struct integ_authorization *out, struct err *e)
{
    char verifier[INTEG_VERIFIER_LEN + 1], challenge[INTEG_CHALLENGE_LEN + 1];
    struct store_oauth_state st;
    struct buf text;
    json_t *asked;
    char *asked_text;
    int64_t now = clock_now_ms();
    int rc;

    memset(out, 0, sizeof(*out));
    if (redirect_uri && integ_redirect_uri(env->cfg, redirect_uri, a, &redirect_uri, e))
        return ERR_INVALID;
    if (!integ_configured(env->cfg, p))
        return err_set(e, ERR_INVALID, "integration_not_configured", "provider",
                       "%s has no OAuth client configured: the operator sets "
                       "WORKFORCE_OAUTH_%s_CLIENT_ID and _CLIENT_SECRET.",
                       p->name, config_oauth_provider_names[p->config_index]);
    if (id_base62(out->state, INTEG_STATE_LEN) || id_base62(out->binding, INTEG_STATE_LEN) ||
        integ_pkce(verifier, challenge))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    buf_init(&text, 64 * 1024);
    asked = scopes_asked(env->cfg, p, scopes, nscopes, &text);
    asked_text = json_dumps(asked, JSON_COMPACT);
    json_decref(asked);
    buf_cleanup(&text);

    memset(&st, 0, sizeof(st));
    hash_hex(out->state, st.state_hash);
    hash_hex(out->binding, st.binding_hash);
    st.tenant = *t;
    st.provider = p->id;
    st.verifier = integ_seal(env->key, t, p->id, "verifier", verifier, a, &st.verifier_len);
    st.redirect_uri = redirect_uri;
    st.scopes = arena_strdup(a, asked_text ? asked_text : "[]");
    st.created_at = now;
    st.expires_at = now + INTEG_STATE_TTL_MS;
    out->url = start_url(env->cfg, p, out->state, a);
    out->expires_at = st.expires_at;
    free(asked_text);
    if (!st.verifier)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "sealing failed");
    rc = store_oauth_state_create(s, &st);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "state write failed");
    return 0;
}

/* ---- The start page ---- */

/* The provider's authorization URL of state 'st' (its verifier opened, its scopes joined). */
static const char *provider_url(const struct integ_env *env, const struct integ_provider *p,
                                const struct store_oauth_state *st, const char *state,
                                struct arena *a)
{
    unsigned char h[CRYPTO_SHA256_LEN];
    char challenge[INTEG_CHALLENGE_LEN + 1];
    const char *verifier =
        integ_open(env->key, &st->tenant, p->id, "verifier", st->verifier, st->verifier_len, a);
    json_t *scopes = json_loads(st->scopes ? st->scopes : "[]", 0, NULL), *v;
    const char *url;
    struct buf text;
    size_t i;

    if (!verifier) {
        json_decref(scopes);
        return NULL;
    }
    crypto_sha256(verifier, strlen(verifier), h);
    crypto_base64url(h, sizeof(h), challenge);
    buf_init(&text, 64 * 1024);
    json_array_foreach(scopes, i, v) buf_appendf(&text, "%s%s", i ? " " : "", json_string_value(v));
    url = integ_authorize_url(env->cfg, p, buf_ptr(&text), state, challenge, a);
    buf_cleanup(&text);
    json_decref(scopes);
    return url;
}

/* Go on to the provider: the state marked opened (and bound to the browser's new cookie
 * 'binding' when not NULL), '*out' the provider's URL. */
static int go_on(const struct integ_env *env, struct store *s, const struct integ_provider *p,
                 const struct store_oauth_state *st, const char *state, const char *binding,
                 struct arena *a, struct integ_opened *out, struct err *e)
{
    char h[2 * CRYPTO_SHA256_LEN + 1];
    int rc;

    if (binding)
        hash_hex(binding, h);
    rc = store_oauth_state_start(s, st->state_hash, p->id, clock_now_ms(), binding ? h : NULL);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "This connection was opened in another browser meanwhile, or has ended. "
                       "Start again with POST /v1/integrations/%s/connect.",
                       p->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "state write failed");
    out->provider_url = provider_url(env, p, st, state, a);
    if (!out->provider_url)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the state does not open");
    return 0;
}

/*
 * See connection.h. The browser that holds the state's cookie goes on at once; another, while no
 * browser went on, is shown whose organization the connection is for and goes on only when it
 * confirms (its confirmation cookie, SameSite=Strict, proves the confirmation came from that
 * page and not from another site), and then holds the binding; once one went on, no other
 * can. Errors: ERR_INVALID invalid_request "state" (none, unknown, used, expired, of another
 * provider, opened in another browser) or "confirm" (a confirmation without its cookie), the
 * store's code, ERR_INTERNAL.
 */
int integ_connect_open(const struct integ_env *env, struct store *s, const struct integ_provider *p,
                       const struct integ_open *q, struct arena *a, struct integ_opened *out,
                       struct err *e)
{
    char hash[2 * CRYPTO_SHA256_LEN + 1];
    struct store_oauth_state st;
    struct store_org org;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!q->state || !*q->state)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "The link has no state: it does not come from a connect.");
    hash_hex(q->state, hash);
    rc = store_oauth_state_peek(s, hash, p->id, clock_now_ms(), a, &st);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "Invalid state: unknown, already used, expired, or of another provider. "
                       "Start again with POST /v1/integrations/%s/connect.",
                       p->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "state read failed");
    if (bound(&st, q->binding))
        return go_on(env, s, p, &st, q->state, NULL, a, out, e);
    if (st.opened_at)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "This connection was opened in another browser: finish it there, or "
                       "start again with POST /v1/integrations/%s/connect.",
                       p->id);
    if (q->confirm) {
        if (!q->confirm_cookie || strlen(q->confirm_cookie) != INTEG_STATE_LEN ||
            strlen(q->confirm) != INTEG_STATE_LEN ||
            !crypto_equal(q->confirm, q->confirm_cookie, INTEG_STATE_LEN))
            return err_set(e, ERR_INVALID, "invalid_request", "confirm",
                           "This confirmation did not come from this browser's page: open the "
                           "link again and press Continue.");
        if (id_base62(out->binding, INTEG_STATE_LEN))
            return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
        return go_on(env, s, p, &st, q->state, out->binding, a, out, e);
    }
    rc = store_org_get(s, st.tenant.org_id, &org);
    if (rc)
        return err_set(e, rc == ERR_NOT_FOUND ? ERR_INVALID : rc,
                       rc == ERR_NOT_FOUND ? "invalid_request" : "internal_error", "state",
                       "The organization of this connection is gone.");
    out->org = arena_strdup(a, org.slug);
    out->mode = st.tenant.mode;
    if (id_base62(out->confirm, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    return 0;
}

/* ---- Reading the provider's answers ---- */

/*
 * See connection.h. A transfer that failed (not for its size) is "provider_unreachable";
 * otherwise the answer is read by integ_token_parse() (a cut answer as too large). 'code' and
 * 'why' are cut to their sizes; the strings of '*out' live in 'a'.
 */
int integ_exchange_read(const struct integ_answer *ans, struct arena *a, struct integ_token *out,
                        char *code, size_t code_n, char *why, size_t why_n)
{
    if (ans->rc && !ans->too_big) {
        memset(out, 0, sizeof(*out));
        snprintf(code, code_n, "provider_unreachable");
        snprintf(why, why_n, "the token endpoint did not answer (%s)",
                 ans->why ? ans->why : "no answer");
        return ERR_UPSTREAM;
    }
    return integ_token_parse(ans->status, ans->body,
                             ans->too_big ? INTEG_TOKEN_RESPONSE_MAX + 1 : ans->len, a, out, code,
                             code_n, why, why_n);
}

/* See connection.h: the member p->whoami_field of a whole 2xx JSON answer, when not empty. */
const char *integ_account_read(const struct integ_provider *p, const struct integ_answer *ans,
                               struct arena *a)
{
    const char *name, *out = NULL;
    json_t *o;

    if (ans->rc || ans->status < 200 || ans->status > 299 || !p->whoami_field)
        return NULL;
    o = json_loadb(ans->body, ans->len, 0, NULL);
    name = json_string_value(json_object_get(o, p->whoami_field));
    if (name && *name)
        out = arena_strdup(a, name);
    json_decref(o);
    return out;
}

/* See connection.h: the API URL and p->whoami_path, "{token}" in it replaced by the token,
 * URL-encoded. */
const char *integ_account_url(const struct config *c, const struct integ_provider *p,
                              const char *access_token, struct arena *a)
{
    const char *path = p->whoami_path ? p->whoami_path : "";
    const char *tok = strstr(path, "{token}");
    const char *url;
    struct buf b;

    buf_init(&b, 64 * 1024);
    buf_appends(&b, integ_setting(c, p, CONFIG_OAUTH_API_URL));
    if (tok) {
        buf_append(&b, path, (size_t)(tok - path));
        buf_append_urlenc(&b, access_token);
        buf_appends(&b, tok + 7);
    } else {
        buf_appends(&b, path);
    }
    url = arena_strdup(a, buf_ptr(&b));
    buf_cleanup(&b);
    return url;
}

/* See connection.h: anything but a-z and '_' becomes '_', and an OAuth error code is that. */
void integ_oauth_error_clean(const char *error, char *out, size_t n)
{
    snprintf(out, n, "%s", error);
    for (char *c = out; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || *c == '_'))
            *c = '_';
}

/* ---- Ending ---- */

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

/* A code being exchanged; owned by the exchange from httpc_start() to conclude(). */
struct exchange {
    const struct integ_env *env;
    struct integ_waiter w;
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

static void exchange_free(struct exchange *x)
{
    buf_cleanup(&x->body);
    arena_cleanup(&x->arena);
    free(x->redirect_uri);
    free(x->scopes);
    free(x);
}

/* What the transfer that just ended brought back. */
static struct integ_answer answer_of(const struct exchange *x, int rc, const char *why)
{
    struct integ_answer ans = {rc,         x->status,         why,
                               x->too_big, buf_ptr(&x->body), buf_len(&x->body)};
    return ans;
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

/* What the provider gave, as the JSON text to seal (the caller wipes and frees it). */
static char *secrets_text(const struct exchange *x, int64_t now)
{
    char *scopes = granted_scopes(x->got.scope, x->scopes);
    json_t *sec = json_object();
    char *text;

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
    return text;
}

/* Store the whole connection from what the exchange got; 0, or a code and reason. */
static int store_connection(struct exchange *x, struct store *s, struct arena *a, char *code,
                            size_t code_n, char *reason, size_t reason_n)
{
    struct store_integration row;
    int64_t now = clock_now_ms();
    char *text = secrets_text(x, now);
    int rc;

    memset(&row, 0, sizeof(row));
    row.provider = x->p->id;
    row.status = "connected";
    row.connected_at = now;
    row.updated_at = now;
    /* Slack's workspace: the events of the server's Slack app find the connection by it */
    row.account_key = integ_account_key(x->env->key, x->p, x->got.account_id, a);
    if (text) {
        row.secrets =
            integ_seal(x->env->key, &x->tenant, x->p->id, "secrets", text, a, &row.secrets_len);
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

/* The end of a callback whose exchange started: the connection stored, or the failure noted;
 * the waiter told; 'x' freed. */
static void conclude(struct exchange *x, int rc, char *code, size_t code_n, char *reason,
                     size_t reason_n)
{
    struct store *s = store_pool_get(x->env->pool);
    struct integ_outcome o;
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
    store_pool_put(x->env->pool, s);
    memset(&o, 0, sizeof(o));
    o.p = x->p;
    o.redirect_uri = x->redirect_uri;
    o.error = rc ? code : NULL;
    if (rc)
        err_set(&o.err, ERR_UPSTREAM, "upstream_error", NULL, "The connection to %s failed: %.300s",
                x->p->name, reason);
    x->w.done(x->w.ud, &o);
    arena_cleanup(&a);
    exchange_free(x);
}

/* ---- The exchange ---- */

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

/* The account lookup answered (or did not): its name when it tells it; never a failure. */
static void who_done(void *ud, int rc, long status, const char *why)
{
    struct exchange *x = ud;
    char code[64] = "", reason[512] = "";
    struct integ_answer ans;

    if (status)
        x->status = status;
    ans = answer_of(x, rc, why);
    if (!rc && x->status >= 200 && x->status <= 299) {
        const char *name = integ_account_read(x->p, &ans, &x->arena);
        if (name)
            x->got.account = name;
    } else {
        log_info("integrations: the %s account name is unknown (%s, HTTP %ld)", x->p->id,
                 rc ? (why ? why : "no answer") : "refused", x->status);
    }
    conclude(x, 0, code, sizeof(code), reason, sizeof(reason));
}

/* Ask the provider whose account the token is (GitHub's login, Google's email, ...). */
static void ask_who(struct exchange *x)
{
    const char *headers[2];
    struct httpc_request req;
    struct buf auth;

    if (strstr(x->p->whoami_path, "{token}") &&
        !integ_segment_ok(x->got.access_token, 4096, NULL)) {
        who_done(x, ERR_INVALID, 0, "the token cannot be a segment of the lookup's path");
        return; /* nothing sent: the account's name stays unknown */
    }
    buf_init(&auth, 64 * 1024);
    buf_appendf(&auth, "Authorization: Bearer %s", x->got.access_token);
    headers[0] = buf_ptr(&auth);
    headers[1] = "Accept: application/json";
    memset(&req, 0, sizeof(req));
    req.method = "GET";
    req.url = integ_account_url(x->env->cfg, x->p, x->got.access_token, &x->arena);
    req.headers = headers;
    req.nheaders = 2;
    req.connect_timeout_ms = EXCHANGE_CONNECT_MS;
    req.timeout_ms = EXCHANGE_TIMEOUT_MS;
    buf_reset(&x->body);
    x->status = 0;
    x->too_big = false;
    httpc_start(x->env->httpc, &req, exchange_data, who_done, x); /* copies what it keeps */
    buf_cleanup(&auth);
}

/* The token endpoint answered (or did not): the account name asked for next where the
 * answer does not tell it; then a whole connection stored, or nothing. */
static void exchange_done(void *ud, int rc, long status, const char *why)
{
    struct exchange *x = ud;
    char code[64], reason[512];
    struct integ_answer ans;

    if (status)
        x->status = status;
    ans = answer_of(x, rc, why);
    rc = integ_exchange_read(&ans, &x->arena, &x->got, code, sizeof(code), reason, sizeof(reason));
    if (!rc && !x->got.account && x->p->whoami_path) {
        ask_who(x); /* who_done() concludes */
        return;
    }
    conclude(x, rc, code, sizeof(code), reason, sizeof(reason));
}

/* Start exchanging 'code' for the tenant of 'st'; the waiter is told to defer first. */
static void exchange_start(const struct integ_env *env, const struct integ_provider *p,
                           const struct store_oauth_state *st, const char *code,
                           const char *verifier, const struct integ_waiter *w, struct arena *a)
{
    const char *headers[2] = {"Content-Type: application/x-www-form-urlencoded",
                              "Accept: application/json"};
    struct httpc_request req;
    struct exchange *x = xcalloc(1, sizeof(*x));

    x->env = env;
    x->w = *w;
    x->p = p;
    x->tenant = st->tenant;
    x->redirect_uri = st->redirect_uri ? xstrdup(st->redirect_uri) : NULL;
    x->scopes = xstrdup(st->scopes ? st->scopes : "[]");
    buf_init(&x->body, INTEG_TOKEN_RESPONSE_MAX + 1);
    arena_init(&x->arena);
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.url = integ_setting(env->cfg, p, CONFIG_OAUTH_TOKEN_URL);
    req.headers = headers;
    req.nheaders = 2;
    req.body = integ_code_form(env->cfg, p, code, verifier, a);
    req.body_len = strlen(req.body);
    req.connect_timeout_ms = EXCHANGE_CONNECT_MS;
    req.timeout_ms = EXCHANGE_TIMEOUT_MS;
    w->defer(w->ud);
    /* From here 'x' belongs to the exchange: exchange_done() may run before this returns. */
    httpc_start(env->httpc, &req, exchange_data, exchange_done, x);
}

/* ---- The callback ---- */

/* The user said no, or the provider sent no code: the failure noted, the outcome now. */
static void refused(struct store *s, const struct integ_provider *p,
                    const struct store_oauth_state *st, const char *error,
                    struct integ_outcome *out, struct arena *a)
{
    char oauth_error[64];
    struct arena tmp;

    integ_oauth_error_clean(error ? error : "invalid_request", oauth_error, sizeof(oauth_error));
    arena_init(&tmp);
    record_failure(s, &st->tenant, p, oauth_error, &tmp);
    arena_cleanup(&tmp);
    out->redirect_uri = st->redirect_uri;
    out->error = arena_strdup(a, oauth_error);
    err_set(&out->err, ERR_INVALID, "invalid_request", "error",
            "The connection to %s was not made: %s.", p->name,
            error ? oauth_error : "the provider sent no code");
}

/*
 * See connection.h. Takes the state of 'q' (single use), which must be bound to the browser's
 * cookie 'q->binding', and then either ends now, with
 * '*out' set and not pending (the provider sent an error or no code: noted as the record's
 * error), or exchanges the code: 'out->pending' set, 'w->defer' called before the exchange
 * starts and 'w->done' with the outcome once it is stored or failed. Errors in 'e' (nothing
 * started): ERR_INVALID invalid_request "state" (none, unknown, used, expired, of another
 * provider, or a browser that did not start it), ERR_INTERNAL (the state does not open), the
 * store's code.
 */
int integ_connect_finish(const struct integ_env *env, struct store *s,
                         const struct integ_provider *p, const struct integ_callback *q,
                         const struct integ_waiter *w, struct arena *a, struct integ_outcome *out,
                         struct err *e)
{
    char hash[2 * CRYPTO_SHA256_LEN + 1];
    struct store_oauth_state st;
    const char *verifier;
    int rc;

    memset(out, 0, sizeof(*out));
    out->p = p;
    if (!q->state || !*q->state)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "The callback has no state: it does not come from a connect.");
    hash_hex(q->state, hash);
    rc = store_oauth_state_take(s, hash, p->id, clock_now_ms(), a, &st);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "Invalid state: unknown, already used, expired, or of another provider. "
                       "Start again with POST /v1/integrations/%s/connect.",
                       p->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "state read failed");
    /* Taken first: a callback in a browser that did not start the flow uses it up too. */
    if (!bound(&st, q->binding))
        return err_set(e, ERR_INVALID, "invalid_request", "state",
                       "This connection was started in another browser: a link sent to you "
                       "connects nothing. Start again with POST /v1/integrations/%s/connect.",
                       p->id);
    if (q->error || !q->code || !*q->code) {
        refused(s, p, &st, q->error, out, a);
        return 0;
    }
    verifier = integ_open(env->key, &st.tenant, p->id, "verifier", st.verifier, st.verifier_len, a);
    if (!verifier)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the state does not open");
    out->pending = true;
    exchange_start(env, p, &st, q->code, verifier, w, a);
    return 0;
}
