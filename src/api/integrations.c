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
 * error, events_url, operations} */
static void write_view(struct jw *w, const struct integ_view *v)
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
    jw_str(w, v->events_url);
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
    write_view(&w, v);
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
        write_view(&w, &views[i]);
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
    if (b.redirect_uri && !redirect_ok(b.redirect_uri))
        return err_set(e, ERR_INVALID, "invalid_request", "redirect_uri",
                       "Invalid redirect_uri: must be an absolute http:// or https:// URL with a "
                       "host and no fragment.");
    rc = integ_connect_start(INTEG(r), r->store, &r->tenant, p, b.redirect_uri,
                             JB_HAS(res, 1) ? b.scopes.v : NULL, b.scopes.n, r->arena, &auth, e);
    if (rc)
        return rc;

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

/* ---- Callback ---- */

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
                               router_query(r, "error")};
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

/*
 * POST /v1/integrations/{provider}/events/{token}: an event the provider sends (no API key:
 * the token names the organization and mode, the provider's signature proves the sender).
 * A verified event starts every enabled workflow of the tenant triggered by its name, with
 * the payload as trigger data; a delivery seen before starts nothing again.
 */
int api_integrations_events(struct router_req *r, struct err *e)
{
    const struct integ_provider *p = integ_provider_find(r->params[0]);
    struct integ_inbound in;
    struct integ_event ev;
    json_t *runs;
    int rc;

    if (!p || p->events == INTEG_EVENTS_NONE)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "No such route: POST %.200s.",
                       http_req_path(r->http));
    memset(&in, 0, sizeof(in));
    in.body = http_req_body(r->http, &in.len);
    in.payload = r->body;
    in.header = req_header;
    in.header_ud = r->http;
    in.now_ms = clock_now_ms();
    rc = integ_event_receive(r->env->cfg, r->store, &r->tenant, p, &in, r->arena, &ev, e);
    if (rc)
        return rc;
    if (ev.answer) {
        router_respond(r, ev.answer);
        return 0;
    }
    runs = json_array();
    if (ev.name && !ev.duplicate) {
        rc = wf_runs_for_event(r->store, &r->tenant, ev.name, r->body, r->arena, runs, e);
        if (rc) {
            json_decref(runs);
            return rc;
        }
        if (json_array_size(runs))
            task_runner_wake(api_svc(r)->tasks);
    }
    router_respond(
        r, json_pack("{s:s?,s:b,s:o}", "event", ev.name, "duplicate", ev.duplicate, "runs", runs));
    return 0;
}
