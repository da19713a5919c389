/* SPDX-License-Identifier: MIT */
/*
 * provider.c: the handle of the configured OpenID provider (see oidc.h): its discovery
 * document and JWKS, fetched over httpc and kept, and the two operations of a sign-in: the
 * authorization URL (oidc_authorize) and the code exchanged with its ID token checked
 * (oidc_sign_in).
 *
 * DESIGN. An operation is a small state machine that runs on httpc's thread: each step starts
 * one transfer and the transfer's end runs the next step, so no thread waits on the network
 * (the request that asked is deferred by its handler). Steps: the discovery document when it
 * is not held yet; the token request; the JWKS when none is held, or when the token's kid is
 * not in it (the provider rotated its keys). That second fetch is claimed under the lock and
 * happens at most once every OIDC_JWKS_REFRESH_MS for the whole handle, so tokens with made-up
 * kids cannot make the server hammer the provider. The discovery document never changes once
 * held; the JWKS is replaced whole, and tokens are checked against it under the lock (a check
 * takes tens of microseconds), so a replacement never frees keys in use.
 */
#include "oidc.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../httpc/httpc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_MS_DEFAULT 5000
#define TIMEOUT_MS_DEFAULT 10000

struct oidc {
    struct httpc *h;
    char *issuer, *client_id, *client_secret;
    long connect_ms, timeout_ms;
    pthread_mutex_t mu; /* guards everything below */
    bool discovered;
    struct arena darena; /* the discovery document's strings, written once */
    struct oidc_discovery d;
    struct arena *karena; /* the JWKS's bytes; NULL: no JWKS held */
    struct oidc_jwks keys;
    int64_t keys_refresh_ms; /* when the last fetch for an unknown kid was claimed; 0: never */
    struct oidc_stats stats;
};

enum op_kind { OP_AUTHORIZE, OP_SIGN_IN };
enum op_step { STEP_DISCOVERY, STEP_TOKEN, STEP_JWKS };

/* One operation under way; it owns its copies and frees itself when it tells its caller. */
struct op {
    struct oidc *o;
    enum op_kind kind;
    enum op_step step;
    struct buf body;
    long status;
    struct arena a;
    void *ud;
    /* OP_AUTHORIZE */
    struct oidc_flow flow;
    oidc_url_fn url_done;
    /* both */
    char *redirect_uri;
    /* OP_SIGN_IN */
    char *code, *verifier, *nonce;
    const char *id_token; /* in 'a' once the token endpoint answered */
    bool refetched;       /* the JWKS was fetched for this token already */
    oidc_claims_fn claims_done;
};

/* ---- The handle ---- */

/* See oidc.h. */
int oidc_new(struct httpc *h, const struct oidc_settings *s, struct oidc **out, struct err *e)
{
    struct oidc *o;

    *out = NULL;
    if (!oidc_url_ok(s->issuer))
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OIDC_ISSUER",
                       "must be an https URL (http only to 127.0.0.1 or localhost)");
    if (!s->client_id || !*s->client_id || !s->client_secret || !*s->client_secret)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OIDC_CLIENT_ID",
                       "the client id and secret are required with an issuer");
    o = xcalloc(1, sizeof(*o));
    o->h = h;
    o->issuer = xstrdup(s->issuer);
    o->client_id = xstrdup(s->client_id);
    o->client_secret = xstrdup(s->client_secret);
    o->connect_ms = s->connect_timeout_ms > 0 ? s->connect_timeout_ms : CONNECT_MS_DEFAULT;
    o->timeout_ms = s->timeout_ms > 0 ? s->timeout_ms : TIMEOUT_MS_DEFAULT;
    pthread_mutex_init(&o->mu, NULL);
    arena_init(&o->darena);
    *out = o;
    return 0;
}

/* See oidc.h. */
void oidc_free(struct oidc *o)
{
    if (!o)
        return;
    if (o->karena) {
        arena_cleanup(o->karena);
        free(o->karena);
    }
    arena_cleanup(&o->darena);
    pthread_mutex_destroy(&o->mu);
    memset(o->client_secret, 0, strlen(o->client_secret));
    free(o->client_secret);
    free(o->client_id);
    free(o->issuer);
    free(o);
}

/* See oidc.h. */
void oidc_stats_get(struct oidc *o, struct oidc_stats *out)
{
    pthread_mutex_lock(&o->mu);
    *out = o->stats;
    pthread_mutex_unlock(&o->mu);
}

/* ---- Operations ---- */

static struct op *op_new(struct oidc *o, enum op_kind kind, const char *redirect_uri, void *ud)
{
    struct op *op = xcalloc(1, sizeof(*op));
    op->o = o;
    op->kind = kind;
    op->ud = ud;
    op->redirect_uri = xstrdup(redirect_uri);
    buf_init(&op->body, OIDC_ANSWER_MAX + 1);
    arena_init(&op->a);
    return op;
}

static void op_free(struct op *op)
{
    buf_cleanup(&op->body);
    arena_cleanup(&op->a);
    free(op->redirect_uri);
    free(op->code);
    if (op->verifier) {
        memset(op->verifier, 0, strlen(op->verifier));
        free(op->verifier);
    }
    free(op->nonce);
    memset(&op->flow, 0, sizeof(op->flow));
    free(op);
}

/* Tell the caller of 'op' the failure 'rc' (why in 'e'), and free 'op'. */
static void fail(struct op *op, int rc, const struct err *e)
{
    log_warn("oidc: %s failed: %s (%s)", op->kind == OP_AUTHORIZE ? "sign-in start" : "sign-in",
             e->msg, e->param[0] ? e->param : "-");
    if (op->kind == OP_AUTHORIZE)
        op->url_done(op->ud, rc, NULL, e);
    else
        op->claims_done(op->ud, rc, NULL, e);
    op_free(op);
}

static int on_data(void *ud, long status, const char *p, size_t n)
{
    struct op *op = ud;
    op->status = status;
    return buf_append(&op->body, p, n) ? 1 : 0; /* over OIDC_ANSWER_MAX: abort */
}

/* The end of a transfer of 'op': its answer read by the step that asked, and the next step. */
static void on_done(void *ud, int rc, long status, const char *why);

/* Start the transfer of 'op''s current step: 'method' 'url' with 'body' (NULL: none). */
static void transfer(struct op *op, const char *method, const char *url, const char *body)
{
    const char *headers[3] = {"Accept: application/json", NULL, NULL};
    struct httpc_request req;
    size_t nh = 1;

    if (body) {
        headers[nh++] = "Content-Type: application/x-www-form-urlencoded";
        headers[nh++] = oidc_basic_auth(op->o->client_id, op->o->client_secret, &op->a);
    }
    buf_reset(&op->body);
    op->status = 0;
    memset(&req, 0, sizeof(req));
    req.method = method;
    req.url = url;
    req.headers = headers;
    req.nheaders = nh;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.connect_timeout_ms = op->o->connect_ms;
    req.timeout_ms = op->o->timeout_ms;
    req.peers = HTTPC_PEERS_ANY; /* the operator's own provider, as configured */
    /* From here 'op' belongs to the transfer: on_done() may run before this returns (at once,
     * on this thread, when the client is stopping). */
    httpc_start(op->o->h, &req, on_data, on_done, op);
}

/* The discovery document held, copied into 'op''s arena; false when none is held yet. */
static bool discovery(struct op *op, struct oidc_discovery *out)
{
    struct oidc *o = op->o;
    bool held;
    pthread_mutex_lock(&o->mu);
    held = o->discovered;
    if (held) {
        out->issuer = arena_strdup(&op->a, o->d.issuer);
        out->authorization_endpoint = arena_strdup(&op->a, o->d.authorization_endpoint);
        out->token_endpoint = arena_strdup(&op->a, o->d.token_endpoint);
        out->jwks_uri = arena_strdup(&op->a, o->d.jwks_uri);
    }
    pthread_mutex_unlock(&o->mu);
    return held;
}

/* Keep the discovery document 'd' (read by 'op') unless one is held already. */
static void discovery_keep(struct oidc *o, const struct oidc_discovery *d)
{
    pthread_mutex_lock(&o->mu);
    if (!o->discovered) {
        o->d.issuer = arena_strdup(&o->darena, d->issuer);
        o->d.authorization_endpoint = arena_strdup(&o->darena, d->authorization_endpoint);
        o->d.token_endpoint = arena_strdup(&o->darena, d->token_endpoint);
        o->d.jwks_uri = arena_strdup(&o->darena, d->jwks_uri);
        o->discovered = true;
    }
    pthread_mutex_unlock(&o->mu);
}

/* Claim a JWKS fetch: always when none is held ('refresh' false); for a token whose kid is not
 * in the one held ('refresh'), only the first of each OIDC_JWKS_REFRESH_MS. True when this
 * caller may fetch. */
static bool jwks_claim(struct oidc *o, bool refresh)
{
    int64_t now = clock_mono_us() / 1000;
    bool mine = true;
    pthread_mutex_lock(&o->mu);
    if (refresh) {
        mine = o->keys_refresh_ms == 0 || now - o->keys_refresh_ms >= OIDC_JWKS_REFRESH_MS;
        if (mine)
            o->keys_refresh_ms = now;
    }
    if (mine)
        o->stats.jwks_fetches++;
    pthread_mutex_unlock(&o->mu);
    return mine;
}

/* Replace the JWKS held with the one in 'body'. 0, or ERR_INVALID (the old one kept). */
static int jwks_keep(struct oidc *o, const char *body, size_t len, struct err *e)
{
    struct arena *fresh = xcalloc(1, sizeof(*fresh)), *old;
    struct oidc_jwks *keys = xcalloc(1, sizeof(*keys));
    int rc;

    arena_init(fresh);
    rc = oidc_jwks_parse(body, len, fresh, keys, e);
    if (rc) {
        arena_cleanup(fresh);
        free(fresh);
        free(keys);
        return rc;
    }
    pthread_mutex_lock(&o->mu);
    old = o->karena;
    o->karena = fresh;
    o->keys = *keys;
    pthread_mutex_unlock(&o->mu);
    if (old) {
        arena_cleanup(old);
        free(old);
    }
    free(keys);
    return 0;
}

/* Check the ID token of 'op' against the JWKS held: oidc_id_token_verify()'s answer, or -1
 * when no JWKS is held. */
static int verify(struct op *op, struct oidc_claims *out, struct err *e)
{
    struct oidc *o = op->o;
    struct oidc_expect x = {o->issuer, o->client_id, op->nonce, clock_now_ms() / 1000};
    int rc = -1;
    pthread_mutex_lock(&o->mu);
    if (o->karena)
        rc = oidc_id_token_verify(&o->keys, &x, op->id_token, strlen(op->id_token), &op->a, out, e);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* The token of 'op' checked, with the JWKS fetched first when none is held or when its kid is
 * unknown (once per token, and once per OIDC_JWKS_REFRESH_MS for the handle). */
static void check_token(struct op *op)
{
    struct oidc_discovery d;
    struct oidc_claims c;
    struct err e;
    int rc;

    err_clear(&e);
    rc = verify(op, &c, &e);
    if (rc == 0) {
        log_info("oidc: an ID token of %s checked", op->o->issuer);
        op->claims_done(op->ud, 0, &c, NULL);
        op_free(op);
        return;
    }
    if ((rc == -1 || rc == ERR_NOT_FOUND) && !op->refetched &&
        jwks_claim(op->o, rc == ERR_NOT_FOUND) && discovery(op, &d)) {
        op->refetched = true;
        op->step = STEP_JWKS;
        transfer(op, "GET", d.jwks_uri, NULL);
        return;
    }
    if (rc == -1)
        rc = err_set(&e, ERR_UPSTREAM, "oidc_failed", "jwks", "the provider's keys are not held");
    else if (rc == ERR_NOT_FOUND && !op->refetched)
        err_set(&e, ERR_NOT_FOUND, "oidc_failed", "kid",
                "no key of the provider has the ID token's kid, and its keys were fetched for "
                "an unknown kid less than %d s ago",
                OIDC_JWKS_REFRESH_MS / 1000);
    fail(op, rc, &e);
}

/* The next step of 'op' once the discovery document is held. */
static void run(struct op *op)
{
    struct oidc_discovery d;
    struct err e;

    if (!discovery(op, &d)) {
        pthread_mutex_lock(&op->o->mu);
        op->o->stats.discovery_fetches++;
        pthread_mutex_unlock(&op->o->mu);
        op->step = STEP_DISCOVERY;
        transfer(op, "GET", oidc_discovery_url(op->o->issuer, &op->a), NULL);
        return;
    }
    if (op->kind == OP_AUTHORIZE) {
        const char *url = oidc_authorize_url(d.authorization_endpoint, op->o->client_id,
                                             op->redirect_uri, &op->flow, &op->a);
        op->url_done(op->ud, 0, url, NULL);
        op_free(op);
        return;
    }
    if (op->id_token) {
        check_token(op);
        return;
    }
    err_clear(&e);
    pthread_mutex_lock(&op->o->mu);
    op->o->stats.exchanges++;
    pthread_mutex_unlock(&op->o->mu);
    op->step = STEP_TOKEN;
    transfer(op, "POST", d.token_endpoint,
             oidc_code_form(op->code, op->redirect_uri, op->verifier, &op->a));
}

static void on_done(void *ud, int rc, long status, const char *why)
{
    struct op *op = ud;
    const char *body = buf_ptr(&op->body);
    size_t len = buf_len(&op->body);
    struct oidc_discovery d;
    struct err e;

    err_clear(&e);
    if (status)
        op->status = status;
    if (rc) {
        err_set(&e, ERR_UPSTREAM, "oidc_failed", "provider", "the provider was not reached: %.200s",
                why ? why : "no answer");
        fail(op, ERR_UPSTREAM, &e);
        return;
    }
    switch (op->step) {
    case STEP_DISCOVERY:
        if (op->status != 200)
            rc = err_set(&e, ERR_UPSTREAM, "oidc_failed", "discovery",
                         "the discovery document was answered with HTTP %ld", op->status);
        else
            rc = oidc_discovery_parse(body, len, op->o->issuer, &op->a, &d, &e);
        if (rc)
            break;
        discovery_keep(op->o, &d);
        run(op);
        return;
    case STEP_TOKEN:
        rc = oidc_token_answer_parse(op->status, body, len, &op->a, &op->id_token, &e);
        if (rc)
            break;
        check_token(op);
        return;
    case STEP_JWKS:
        if (op->status != 200)
            rc = err_set(&e, ERR_UPSTREAM, "oidc_failed", "jwks",
                         "the JWKS was answered with HTTP %ld", op->status);
        else
            rc = jwks_keep(op->o, body, len, &e);
        if (rc)
            break;
        log_info("oidc: the JWKS of %s fetched", op->o->issuer);
        check_token(op);
        return;
    }
    fail(op, rc == ERR_INVALID ? ERR_UPSTREAM : rc, &e);
}

/* See oidc.h. */
void oidc_authorize(struct oidc *o, const struct oidc_flow *f, const char *redirect_uri,
                    oidc_url_fn done, void *ud)
{
    struct op *op = op_new(o, OP_AUTHORIZE, redirect_uri, ud);
    op->flow = *f;
    op->url_done = done;
    run(op);
}

/* See oidc.h. */
void oidc_sign_in(struct oidc *o, const char *code, const char *redirect_uri, const char *verifier,
                  const char *nonce, oidc_claims_fn done, void *ud)
{
    struct op *op = op_new(o, OP_SIGN_IN, redirect_uri, ud);
    op->code = xstrdup(code);
    op->verifier = xstrdup(verifier);
    op->nonce = xstrdup(nonce);
    op->claims_done = done;
    run(op);
}
