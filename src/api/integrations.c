/* SPDX-License-Identifier: MIT */
/*
 * integrations.c: the handlers of contract §13. The five providers and the tenant's connection
 * to each, connect (an OAuth authorization code with PKCE), the callback that exchanges the
 * code, disconnect, and the events the providers send.
 *
 * Each handler parses the request, calls one function of integrations/ and renders what it
 * returns: the record, the user's way back (a redirect or a short page) or the error. The
 * domain work (state, exchange, account lookup, storage, revocation, signatures, event names)
 * is there. The callback answers later: its exchange runs on the outbound HTTP client, and the
 * waiter given to integ_connect_finish() defers the request and resumes it with the outcome.
 */
#include "api.h"

#include "../tasks/runner.h"
#include "../workflows/run.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../integrations/connection.h"
#include "../integrations/inbound.h"
#include "../integrations/providers.h"

#include <stdlib.h>
#include <string.h>

#define REDIRECT_URI_MAX 2048
#define SCOPE_MAX 200
/* What integrations/ needs (configuration, store pool, httpc, sealing key), built by main. */
#define INTEG(r) (api_svc(r)->agent.integ)

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

/* {provider, name, category, status, configured, account, scopes, connected_at, expires_at,
 * error, events_url, operations}; events_url (its token is a secret) only for 'secrets'. */
static void write_view(struct jw *w, const struct integ_view *v, bool secrets)
{
    const struct integ_provider *p = v->p;

    jw_obj(w);
    jw_key(w, "provider");
    jw_str(w, p->id);
    jw_key(w, "name");
    jw_str(w, p->name);
    jw_key(w, "category");
    jw_str(w, p->category);
    jw_key(w, "status");
    jw_str(w, v->status);
    jw_key(w, "configured");
    jw_bool(w, v->configured);
    jw_key(w, "account");
    jw_str(w, v->account);
    jw_key(w, "scopes");
    jw_raw(w, v->scopes, "[]");
    jw_key(w, "connected_at");
    jw_time(w, v->connected_at);
    jw_key(w, "expires_at");
    jw_time(w, v->expires_at);
    jw_key(w, "error");
    jw_str(w, v->error);
    jw_key(w, "events_url");
    jw_str(w, secrets ? v->events_url : NULL);
    jw_key(w, "operations");
    jw_arr(w);
    for (size_t i = 0; p->operations[i]; i++)
        jw_str(w, p->operations[i]);
    jw_arr_end(w);
    jw_obj_end(w);
}

/* Answer one record. */
static int respond_view(struct router_req *r, const struct integ_view *v, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, 64 * 1024);
    jw_init(&w, &b);
    write_view(&w, v, router_sees_secrets(r));
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/integrations: always the five, in the contract's order. */
int api_integrations_list(struct router_req *r, struct err *e)
{
    struct integ_view views[INTEG_PROVIDERS];
    struct buf b;
    struct jw w;
    int rc = integ_view_list(INTEG(r), r->store, &r->tenant, r->arena, views, e);

    if (rc)
        return rc;
    buf_init(&b, 64 * 1024);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "integrations");
    jw_arr(&w);
    for (size_t i = 0; i < INTEG_PROVIDERS; i++)
        write_view(&w, &views[i], router_sees_secrets(r));
    jw_arr_end(&w);
    jw_key(&w, "has_more");
    jw_bool(&w, false);
    jw_key(&w, "next_cursor");
    jw_null(&w);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
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
     scope_ok,
     "each scope must be 1 to 200 printable ASCII characters without spaces or commas (match "
     "^[!-+--~]+$)"},
};

const struct jb_binding api_integrations_connect_body = {connect_fields, 2};

/* ---- Cookies: the browser a connection is bound to ---- */

/* Set the cookie 'name' to 'value' ("" with 'max_age' 0: forget it) for the paths of 'p' under
 * 'path' ("" or "authorize"): HttpOnly, SameSite 'same_site', Secure behind https. */
static void set_cookie(struct router_req *r, const struct integ_provider *p, const char *name,
                       const char *value, const char *path, int max_age, const char *same_site)
{
    char *c = arena_printf(r->arena,
                           "%s=%s; Path=/v1/integrations/%s/%s; Max-Age=%d; HttpOnly; "
                           "SameSite=%s%s",
                           name, value, p->id, path, max_age, same_site,
                           strncmp(r->env->cfg->public_url, "https://", 8) == 0 ? "; Secure" : "");
    http_resp_header(r->http, "Set-Cookie", c);
}

/* POST /v1/integrations/{provider}/connect {redirect_uri?, scopes?} */
int api_integrations_connect(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_authorization auth;
    struct connect_body b;
    struct jb_result res;
    struct buf out;
    struct jw w;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, connect_fields, 2, &b, r->arena, &res, e);
    if (rc)
        return rc;
    rc = integ_connect_start(INTEG(r), r->store, &r->tenant, p, b.redirect_uri,
                             JB_HAS(res, 1) ? b.scopes.v : NULL, b.scopes.n, r->arena, &auth, e);
    if (rc)
        return rc;
    /* a browser that called (the console) is the one the connection is bound to */
    set_cookie(r, p, INTEG_COOKIE_BINDING, auth.binding, "", INTEG_STATE_TTL_MS / 1000, "Lax");

    buf_init(&out, 128 * 1024);
    jw_init(&w, &out);
    jw_obj(&w);
    jw_key(&w, "provider");
    jw_str(&w, p->id);
    jw_key(&w, "status");
    jw_str(&w, "pending");
    jw_key(&w, "authorization_url");
    jw_str(&w, auth.url);
    jw_key(&w, "state");
    jw_str(&w, auth.state);
    jw_key(&w, "expires_at");
    jw_time(&w, auth.expires_at);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &out, e);
}

/* ---- The start page ---- */

/* 's' with the characters HTML gives a meaning escaped. */
static void append_html(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            buf_appends(b, "&lt;");
            break;
        case '>':
            buf_appends(b, "&gt;");
            break;
        case '&':
            buf_appends(b, "&amp;");
            break;
        case '"':
            buf_appends(b, "&quot;");
            break;
        case '\'':
            buf_appends(b, "&#39;");
            break;
        default:
            buf_append(b, s, 1);
        }
    }
}

/* The page a browser without the connection's cookie sees: whose organization the connection
 * is for, and Continue (a GET to this page with the confirmation token, which the browser's
 * SameSite=Strict cookie must match: no other site can press it). */
static void confirm_page(struct router_req *r, const struct integ_provider *p, const char *state,
                         const struct integ_opened *o)
{
    char origin[300] = "";
    const char *auth = integ_setting(r->env->cfg, p, CONFIG_OAUTH_AUTH_URL);
    struct buf b;
    char *body;
    size_t len;

    config_origin(auth, strlen(auth), origin, sizeof(origin), NULL);
    /* the form's redirect goes on to the provider: form-action names it (Chrome checks it) */
    http_resp_header(r->http, "Content-Security-Policy",
                     arena_printf(r->arena,
                                  "default-src 'none'; base-uri 'none'; frame-ancestors 'none';"
                                  " form-action 'self' %s",
                                  origin));
    http_resp_header(r->http, "X-Content-Type-Options", "nosniff");
    http_resp_header(r->http, "Referrer-Policy", "no-referrer");
    http_resp_header(r->http, "X-Frame-Options", "DENY");
    http_resp_header(r->http, "Cache-Control", "no-store");
    set_cookie(r, p, INTEG_COOKIE_CONFIRM, o->confirm, "authorize", INTEG_STATE_TTL_MS / 1000,
               "Strict");
    buf_init(&b, 64 * 1024);
    buf_appendf(&b, "<!doctype html><meta charset=\"utf-8\"><title>Connect %s?</title>\n", p->name);
    buf_appendf(&b,
                "<h1>Connect your %s account?</h1>\n<p>This link connects a %s account to "
                "the Workforce organization <strong>",
                p->name, p->name);
    append_html(&b, o->org);
    buf_appendf(&b,
                "</strong> (%s mode). Whoever works in that organization will act with "
                "your account. Continue only if you started this connection yourself; if "
                "someone sent you this link, close this page.</p>\n",
                o->mode == STORE_TEST ? "test" : "live");
    buf_appendf(&b,
                "<form method=\"get\" action=\"/v1/integrations/%s/authorize\">"
                "<input type=\"hidden\" name=\"state\" value=\"",
                p->id);
    append_html(&b, state);
    buf_appendf(&b,
                "\"><input type=\"hidden\" name=\"confirm\" value=\"%s\">"
                "<button type=\"submit\">Continue to %s</button></form>\n",
                o->confirm, p->name);
    body = buf_take(&b, &len);
    router_respond_raw(r, 200, "text/html; charset=utf-8", body, len);
}

/*
 * GET /v1/integrations/{provider}/authorize?state[&confirm] (no API key): where the
 * authorization_url of a connect leads. The browser that holds the connection's cookie goes on
 * to the provider (302); another is shown whose organization the connection is for, and goes
 * on only once it confirms there (then the connection is bound to it).
 */
int api_integrations_authorize(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_open q;
    struct integ_opened o;
    struct buf b;
    char *body;
    size_t len;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    q.state = router_query(r, "state");
    q.confirm = router_query(r, "confirm");
    q.binding = router_cookie(r, INTEG_COOKIE_BINDING);
    q.confirm_cookie = router_cookie(r, INTEG_COOKIE_CONFIRM);
    rc = integ_connect_open(INTEG(r), r->store, p, &q, r->arena, &o, e);
    if (rc)
        return rc;
    if (!o.provider_url) {
        confirm_page(r, p, q.state, &o);
        return 0;
    }
    if (o.binding[0])
        set_cookie(r, p, INTEG_COOKIE_BINDING, o.binding, "", INTEG_STATE_TTL_MS / 1000, "Lax");
    if (q.confirm_cookie)
        set_cookie(r, p, INTEG_COOKIE_CONFIRM, "", "authorize", 0, "Strict");
    http_resp_header(r->http, "Location", o.provider_url);
    http_resp_header(r->http, "Cache-Control", "no-store");
    http_resp_header(r->http, "Referrer-Policy", "no-referrer");
    buf_init(&b, 4096);
    buf_appendf(&b, "<!doctype html><title>Redirecting</title><p>Redirecting to %s.</p>\n",
                p->name);
    body = buf_take(&b, &len);
    router_respond_raw(r, 302, "text/html; charset=utf-8", body, len);
    return 0;
}

/* ---- Callback ---- */

/* The user goes back to 'redirect_uri' (percent-encoded at connect) with the outcome, or sees a
 * short page. */
static void send_back(struct router_req *r, const struct integ_provider *p,
                      const char *redirect_uri, const char *error)
{
    struct buf b;
    char *body;
    size_t len;

    set_cookie(r, p, INTEG_COOKIE_BINDING, "", "", 0, "Lax"); /* the flow is over */
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

/* Render the outcome of a callback: the way back, or the error when there is none. */
static int callback_answer(struct router_req *r, const struct integ_outcome *o, struct err *e)
{
    if (o->error && !o->redirect_uri) {
        *e = o->err;
        return e->kind;
    }
    send_back(r, o->p, o->redirect_uri, o->error);
    return 0;
}

/* The exchange is about to start: the request answers later. */
static void callback_defer(void *ud)
{
    struct router_req *r = ud;
    r->async = true;
    http_req_defer(r->http);
}

/* The exchange ended (on httpc's thread): the outcome rendered, the request resumed. */
static void callback_done(void *ud, const struct integ_outcome *o)
{
    struct router_req *r = ud;
    struct err e;
    int rc = callback_answer(r, o, &e);
    router_async_finish(r, rc, rc ? &e : NULL);
}

/* GET /v1/integrations/{provider}/callback?code&state (or ?error&state): no API key. */
int api_integrations_callback(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_callback q = {router_query(r, "state"), router_query(r, "code"),
                               router_query(r, "error"), router_cookie(r, INTEG_COOKIE_BINDING)};
    struct integ_waiter w = {callback_defer, callback_done, r};
    struct integ_outcome now;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    rc = integ_connect_finish(INTEG(r), r->store, p, &q, &w, r->arena, &now, e);
    if (rc || now.pending)
        return rc; /* pending: 'r' belongs to the exchange, callback_done() answers */
    return callback_answer(r, &now, e);
}

/* ---- Disconnect ---- */

/* DELETE /v1/integrations/{provider}: forget the tokens now, revoke them in the background;
 * answers the integration, available (also when it was not connected). */
int api_integrations_disconnect(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_view v;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    rc = integ_disconnect(INTEG(r), r->store, &r->tenant, p, r->arena, &v, e);
    return rc ? rc : respond_view(r, &v, e);
}

/* ---- Inbound events ---- */

static const char *req_header(void *ud, const char *name)
{
    return http_req_header(ud, name);
}

/* What the provider sent: the raw body, the parsed one (NULL before it is parsed), headers. */
static void inbound_of(struct router_req *r, struct integ_inbound *in)
{
    memset(in, 0, sizeof(*in));
    in->body = http_req_body(r->http, &in->len);
    in->payload = r->body;
    in->header = req_header;
    in->header_ud = r->http;
    in->now_ms = clock_now_ms();
}

/* The provider of an events route that receives events: 'team' also needs it to find its
 * organizations by workspace (Slack's). Else the route is not one (404). */
static const struct integ_provider *events_provider(struct router_req *r, bool team, struct err *e)
{
    const struct integ_provider *p = integ_provider_find(r->params[0]);
    if (!p || p->events == INTEG_EVENTS_NONE || (team && p->events != INTEG_EVENTS_SLACK)) {
        router_no_route(r->http, e);
        return NULL;
    }
    return p;
}

/*
 * The router's ROUTE_VERIFY check of both events routes, before the request counts against any
 * limit: the provider's signature over the raw body, with the organization's own secret where
 * the token's tenant set one (r->authed), else the server's.
 */
int api_integrations_verify(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = events_provider(r, !r->authed, e);
    struct integ_inbound in;

    if (!p)
        return ERR_NOT_FOUND;
    inbound_of(r, &in);
    return integ_event_authenticate(INTEG(r), r->store, r->authed ? &r->tenant : NULL, p, &in,
                                    r->arena, e);
}

/* Note 'ev' for tenant 't' and queue the runs it starts into 'runs'. */
static int receive(struct router_req *r, const struct store_tenant *t,
                   const struct integ_provider *p, const struct integ_inbound *in,
                   struct integ_event *ev, json_t *runs, struct err *e)
{
    size_t before = json_array_size(runs);
    int rc = integ_event_note(r->store, t, p, in, ev, e);

    if (rc || !ev->name || ev->duplicate)
        return rc;
    rc = wf_runs_for_event(r->store, t, ev->name, r->body, r->arena, runs, e);
    if (!rc && json_array_size(runs) > before)
        task_runner_wake(api_svc(r)->tasks);
    return rc;
}

/* Answer {event, duplicate, runs} (takes 'runs'). */
static void respond_event(struct router_req *r, const struct integ_event *ev, bool duplicate,
                          json_t *runs)
{
    router_respond(
        r, json_pack("{s:s?,s:b,s:o}", "event", ev->name, "duplicate", duplicate, "runs", runs));
}

/*
 * POST /v1/integrations/{provider}/events/{token}: an event the provider sends (no API key:
 * the token names the organization and mode; the signature, checked by
 * api_integrations_verify() before the limits, proves the sender). A verified event starts
 * every enabled workflow of the tenant triggered by its name, with the payload as trigger
 * data; a delivery seen before starts nothing again.
 */
int api_integrations_events(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = events_provider(r, false, e);
    struct integ_inbound in;
    struct integ_event ev;
    json_t *runs;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    inbound_of(r, &in);
    integ_event_name(p, &in, r->arena, &ev);
    if (ev.answer) {
        router_respond(r, ev.answer);
        return 0;
    }
    runs = json_array();
    rc = receive(r, &r->tenant, p, &in, &ev, runs, e);
    if (rc) {
        json_decref(runs);
        return rc;
    }
    respond_event(r, &ev, ev.duplicate, runs);
    return 0;
}

/*
 * POST /v1/integrations/{provider}/events (Slack only): the request URL of the server's Slack
 * app, which serves every organization. The event (signed with the app's secret) goes to each
 * organization and mode whose Slack connection holds its workspace (team_id), noted for each;
 * no organization's limits apply (Slack's own do), each run's credits do. 'duplicate': every
 * organization it reached had it already.
 */
int api_integrations_slack_events(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = events_provider(r, true, e);
    struct store_tenant tenants[INTEG_TEAM_TENANTS];
    struct integ_inbound in;
    struct integ_event ev;
    size_t n = 0, seen = 0;
    json_t *runs;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    inbound_of(r, &in);
    integ_event_name(p, &in, r->arena, &ev);
    if (ev.answer) {
        router_respond(r, ev.answer);
        return 0;
    }
    rc = ev.name ? integ_event_tenants(INTEG(r), r->store, p, &in, tenants, &n, e) : 0;
    if (rc)
        return rc;
    runs = json_array();
    for (size_t i = 0; i < n && !rc; i++) {
        rc = receive(r, &tenants[i], p, &in, &ev, runs, e);
        seen += ev.duplicate;
    }
    if (rc) {
        json_decref(runs);
        return rc;
    }
    respond_event(r, &ev, n > 0 && seen == n, runs);
    return 0;
}

/* ---- The organization's events URL and signing secret ---- */

/* {provider, events_url, secret_set, verified_with} */
static int respond_events_view(struct router_req *r, const struct integ_events_view *v,
                               struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, 64 * 1024);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "provider");
    jw_str(&w, v->p->id);
    jw_key(&w, "events_url");
    jw_str(&w, v->events_url);
    jw_key(&w, "secret_set");
    jw_bool(&w, v->secret_set);
    jw_key(&w, "verified_with");
    jw_str(&w, v->verified_with);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/integrations/{provider}/events: how the provider's events reach the organization. */
int api_integrations_events_get(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_events_view v;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    rc = integ_events_get(INTEG(r), r->store, &r->tenant, p, r->arena, &v, e);
    return rc ? rc : respond_events_view(r, &v, e);
}

/* POST /v1/integrations/{provider}/events/rotate: a new events URL; the old one is 404 now. */
int api_integrations_events_rotate(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_events_view v;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    rc = integ_events_rotate(INTEG(r), r->store, &r->tenant, p, r->arena, &v, e);
    return rc ? rc : respond_events_view(r, &v, e);
}

struct secret_body {
    const char *secret;
};

/* Printable ASCII: what GitHub's form takes and a header-free HMAC key needs. */
static bool secret_chars_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f)
            return false;
    }
    return true;
}

static const struct jb_field secret_fields[] = {
    {"secret", JB_STRING, offsetof(struct secret_body, secret), JB_REQUIRED | JB_NULLABLE,
     INTEG_SECRET_MIN, INTEG_SECRET_MAX, NULL, secret_chars_ok,
     "must be printable ASCII (match ^[ -~]+$)"},
};

const struct jb_binding api_integrations_secret_body = {secret_fields, 1};

/* POST /v1/integrations/{provider}/events/secret {secret}: the organization's own signing
 * secret (write-only; null forgets it). */
int api_integrations_events_secret(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = find_provider(r, e);
    struct integ_events_view v;
    struct secret_body b;
    struct jb_result res;
    int rc;

    if (!p)
        return ERR_NOT_FOUND;
    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, secret_fields, 1, &b, r->arena, &res, e);
    if (rc)
        return rc;
    rc = integ_events_secret(INTEG(r), r->store, &r->tenant, p,
                             JB_IS_NULL(res, 0) ? NULL : b.secret, r->arena, &v, e);
    return rc ? rc : respond_events_view(r, &v, e);
}
