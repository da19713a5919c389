/* SPDX-License-Identifier: MIT */
/*
 * webhooks.c: /v1/events and /v1/webhook_endpoints (contract §15). Events are read here; they
 * are written by the store with the change they report. An endpoint's signing secret is shown
 * at its creation and by rotate_secret only; it is kept sealed (integ_seal(), bound to the
 * tenant and the endpoint's id). A rotation keeps the replaced secrets signing next to the new
 * one for WEBHOOKS_ROTATE_OVERLAP_MS each, as receivers need a moment to take the new one.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/id.h"
#include "../core/str.h"
#include "../httpc/hook.h"
#include "../integrations/oauth.h"
#include "../integrations/operations.h"
#include "../webhooks/webhooks.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESP_CAP (8u << 20)
#define KEY(svc) ((svc)->agent.integ->key)
#define SEAL_WHAT "webhook_secret"

/* ---- Events ---- */

/* GET /v1/events: newest first, ?type= one type. */
int api_events_list(struct router_req *r, struct err *e)
{
    struct store_hook_event_page page;
    const char *type = router_query(r, "type");
    int64_t before_created = 0;
    const char *before_id = NULL;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc, x;

    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "evt", &before_created, &before_id, e);
    if (!rc)
        rc = router_query_enum(r, "type", &x, e);
    if (rc)
        return rc;
    rc = store_hook_events_list(r->store, &r->tenant, type, limit, before_created, before_id,
                                r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "event list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "events");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        webhooks_event_write(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

static int read_event(struct router_req *r, const char *id, struct store_hook_event *ev,
                      struct err *e)
{
    int rc = store_hook_event_get(r->store, &r->tenant, id, r->arena, ev);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "event_not_found", "id", "No event %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "event read failed");
    return 0;
}

/* GET /v1/events/{id} */
int api_events_get(struct router_req *r, struct err *e)
{
    struct store_hook_event ev;
    struct buf b;
    struct jw w;
    int rc = read_event(r, r->params[0], &ev, e);
    if (rc)
        return rc;
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    webhooks_event_write(&w, &ev);
    return router_respond_jw(r, &w, &b, e);
}

/* {id, endpoint_id, event_id, status, attempts, last_status_code, last_error, next_attempt_at,
 * created_at, updated_at} */
static void write_delivery(struct jw *w, const struct store_hook_delivery *d)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, d->id);
    jw_key(w, "endpoint_id");
    jw_str(w, d->endpoint_id);
    jw_key(w, "event_id");
    jw_str(w, d->event_id);
    jw_key(w, "status");
    jw_str(w, d->status);
    jw_key(w, "attempts");
    jw_int(w, d->attempts);
    jw_key(w, "last_status_code");
    if (d->last_status_code)
        jw_int(w, d->last_status_code);
    else
        jw_null(w);
    jw_key(w, "last_error");
    jw_str(w, d->last_error);
    jw_key(w, "next_attempt_at");
    jw_time(w, d->next_attempt_at);
    jw_key(w, "created_at");
    jw_time(w, d->created_at);
    jw_key(w, "updated_at");
    jw_time(w, d->updated_at);
    jw_obj_end(w);
}

/* Answer a page of deliveries (to 'endpoint_id', of 'event_id': each NULL for any). */
static int respond_deliveries(struct router_req *r, const char *endpoint_id, const char *event_id,
                              unsigned limit, int64_t before_created, const char *before_id,
                              struct err *e)
{
    struct store_hook_delivery_page page;
    struct buf b;
    struct jw w;
    int rc = store_hook_deliveries_list(r->store, &r->tenant, endpoint_id, event_id, limit,
                                        before_created, before_id, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "delivery list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "deliveries");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        write_delivery(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

struct redeliver_body {
    const char *endpoint_id;
};

static const struct jb_field redeliver_fields[] = {
    {"endpoint_id", JB_STRING, offsetof(struct redeliver_body, endpoint_id), JB_NULLABLE, 1,
     ID_MAX - 1, NULL, NULL, NULL},
};

const struct jb_binding api_events_redeliver_body = {redeliver_fields, 1};

static int read_endpoint(struct router_req *r, const char *id, const char *param,
                         struct store_hook_endpoint *ep, struct err *e);

/*
 * How much redelivery one event may ask for. Each POST /v1/events/{id}/redeliver makes one POST
 * per endpoint (up to 16) from this server to addresses the tenant chose; without a bound a loop
 * of calls made the server send as fast as the key's rate limit allowed, 16 times over, and kept
 * the delivery threads every tenant shares busy. As Stripe bounds its own "resend": a delivery
 * is attempted at most REDELIVER_PER_WINDOW times within any REDELIVER_WINDOW_MS, its automatic
 * retries included (they make 4 in their first hour), counting one under way or due; a
 * redelivery past that is refused with 429 rate_limit_exceeded and Retry-After. A redelivery
 * asked while one is due or under way adds no POST (the store makes it due once).
 */
#define REDELIVER_PER_WINDOW 10
#define REDELIVER_WINDOW_MS (3600 * 1000LL)

/* 0 when event 'ev_id''s deliveries (to 'endpoint_id', NULL: all) may be attempted again now,
 * else 429 rate_limit_exceeded in 'e' with Retry-After. */
static int redeliver_allowed(struct router_req *r, const char *ev_id, const char *endpoint_id,
                             int64_t now, struct err *e)
{
    int64_t most = 0, oldest = now, wait_s;
    char v[24];
    int rc = store_hook_recent_attempts(r->store, &r->tenant, ev_id, endpoint_id,
                                        now - REDELIVER_WINDOW_MS, now, &most, &oldest);

    if (rc)
        return err_set(e, rc, "internal_error", NULL, "redelivery check failed");
    if (most < REDELIVER_PER_WINDOW)
        return 0;
    wait_s = (oldest + REDELIVER_WINDOW_MS - now + 999) / 1000;
    if (wait_s < 1)
        wait_s = 1;
    snprintf(v, sizeof(v), "%lld", (long long)wait_s);
    http_resp_header(r->http, "Retry-After", v);
    return err_set(e, ERR_LIMIT, "rate_limit_exceeded", NULL,
                   "A delivery of this event was attempted %lld times in the last hour, retries "
                   "included (at most %d). Retry after %lld s.",
                   (long long)most, REDELIVER_PER_WINDOW, (long long)wait_s);
}

/* POST /v1/events/{id}/redeliver {endpoint_id?}: the event's deliveries due again now, to one
 * endpoint or to every enabled endpoint that takes its type (within the bound above); answers
 * those deliveries. */
int api_events_redeliver(struct router_req *r, struct err *e)
{
    struct redeliver_body body = {0};
    struct store_hook_event ev;
    struct store_hook_endpoint ep;
    struct jb_result res;
    int64_t now = clock_now_ms();
    size_t n = 0;
    int rc = jb_bind(r->body, redeliver_fields, 1, &body, r->arena, &res, e);

    if (!rc)
        rc = read_event(r, r->params[0], &ev, e);
    if (!rc && body.endpoint_id) {
        rc = read_endpoint(r, body.endpoint_id, "endpoint_id", &ep, e);
        if (!rc && !ep.enabled)
            return err_set(e, ERR_INVALID, "invalid_request", "endpoint_id",
                           "The endpoint %.60s is disabled: enable it first.", ep.id);
    }
    if (!rc)
        rc = redeliver_allowed(r, ev.id, body.endpoint_id, now, e);
    if (rc)
        return rc;
    rc = store_hook_redeliver(r->store, &r->tenant, ev.id, body.endpoint_id, now, &n);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "event_not_found", "id", "No event %.60s.", ev.id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "redelivery failed");
    return respond_deliveries(r, body.endpoint_id, ev.id, 100, 0, NULL, e);
}

/* ---- Endpoints ---- */

#define ENDPOINTS_MAX 16
#define URL_MAX HTTPC_HOOK_URL_MAX
#define DESCRIPTION_MAX 500

struct endpoint_body {
    const char *url;
    struct jb_strings events;
    bool enabled;
    const char *description;
};

enum { F_URL, F_EVENTS, F_ENABLED, F_DESCRIPTION, F_N };

static const struct jb_field create_fields[F_N] = {
    {"url", JB_STRING, offsetof(struct endpoint_body, url), JB_REQUIRED, 1, URL_MAX, NULL, NULL,
     NULL},
    {"events", JB_STRING_ARRAY, offsetof(struct endpoint_body, events), JB_REQUIRED | JB_UNIQUE, 1,
     16, webhooks_event_selectors, NULL, NULL},
    {"enabled", JB_BOOL, offsetof(struct endpoint_body, enabled), 0, 0, 0, NULL, NULL, NULL},
    {"description", JB_STRING, offsetof(struct endpoint_body, description), JB_NULLABLE, 0,
     DESCRIPTION_MAX, NULL, NULL, NULL},
};

const struct jb_binding api_webhook_endpoints_create_body = {create_fields, F_N};

static const struct jb_field update_fields[F_N] = {
    {"url", JB_STRING, offsetof(struct endpoint_body, url), 0, 1, URL_MAX, NULL, NULL, NULL},
    {"events", JB_STRING_ARRAY, offsetof(struct endpoint_body, events), JB_UNIQUE, 1, 16,
     webhooks_event_selectors, NULL, NULL},
    {"enabled", JB_BOOL, offsetof(struct endpoint_body, enabled), 0, 0, 0, NULL, NULL, NULL},
    {"description", JB_STRING, offsetof(struct endpoint_body, description), JB_NULLABLE, 0,
     DESCRIPTION_MAX, NULL, NULL, NULL},
};

const struct jb_binding api_webhook_endpoints_update_body = {update_fields, F_N};

/* The events list as stored: a JSON array ("*" alone when it is there). */
static const char *events_json(struct router_req *r, const struct jb_strings *v, struct err *e,
                               int *rc)
{
    json_t *a = json_array();
    char *text;
    const char *out;
    bool all = false;

    for (size_t i = 0; i < v->n; i++)
        all = all || strcmp(v->v[i], "*") == 0;
    if (all)
        json_array_append_new(a, json_string("*"));
    else
        for (size_t i = 0; i < v->n; i++)
            json_array_append_new(a, json_string(v->v[i]));
    text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    if (!text) {
        *rc = err_set(e, ERR_NOMEM, "internal_error", NULL, "out of memory");
        return NULL;
    }
    out = arena_strdup(r->arena, text);
    free(text);
    *rc = 0;
    return out;
}

/* A new secret ("whsec_" + base64 of 24 random bytes), from 'r->arena'; NULL: no random bytes. */
static const char *new_secret(struct router_req *r)
{
    char secret[CRYPTO_WHSEC_STR_LEN];
    return crypto_whsec_new(secret) ? NULL : arena_strdup(r->arena, secret);
}

/* Seal 'secret' for endpoint 'id' of the tenant. */
static int seal(struct router_req *r, const char *id, const char *secret, const unsigned char **out,
                size_t *n, struct err *e)
{
    *out = integ_seal(KEY(api_svc(r)), &r->tenant, id, SEAL_WHAT, secret, r->arena, n);
    return *out ? 0 : err_set(e, ERR_INTERNAL, "internal_error", NULL, "sealing failed");
}

/* {id, url, events, enabled, description, created_at, updated_at[, secret]} */
static void write_endpoint(struct jw *w, const struct store_hook_endpoint *ep, const char *secret)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, ep->id);
    jw_key(w, "url");
    jw_str(w, ep->url);
    jw_key(w, "events");
    jw_raw(w, ep->events, "[]");
    jw_key(w, "enabled");
    jw_bool(w, ep->enabled);
    jw_key(w, "description");
    jw_str(w, ep->description);
    if (secret) {
        jw_key(w, "secret");
        jw_str(w, secret);
    }
    jw_key(w, "created_at");
    jw_time(w, ep->created_at);
    jw_key(w, "updated_at");
    jw_time(w, ep->updated_at);
    jw_obj_end(w);
}

static int respond_endpoint(struct router_req *r, const struct store_hook_endpoint *ep,
                            const char *secret, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    write_endpoint(&w, ep, secret);
    return router_respond_jw(r, &w, &b, e);
}

static int read_endpoint(struct router_req *r, const char *id, const char *param,
                         struct store_hook_endpoint *ep, struct err *e)
{
    int rc = store_hook_endpoint_get(r->store, &r->tenant, id, r->arena, ep);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "webhook_endpoint_not_found", param, "No webhook endpoint %.60s.",
                       id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "endpoint read failed");
    return 0;
}

/* POST /v1/webhook_endpoints {url, events, enabled?, description?} */
int api_webhook_endpoints_create(struct router_req *r, struct err *e)
{
    struct endpoint_body b = {.enabled = true};
    struct store_hook_endpoint ep;
    struct jb_result res;
    const char *secret;
    char *id = arena_alloc(r->arena, ID_MAX);
    int rc = jb_bind(r->body, create_fields, F_N, &b, r->arena, &res, e);

    if (!rc)
        rc = httpc_hook_url_parse(b.url, strlen(b.url), NULL, "url", e);
    if (rc)
        return rc;
    memset(&ep, 0, sizeof(ep));
    ep.events = events_json(r, &b.events, e, &rc);
    if (rc)
        return rc;
    if (id_new("we", id, ID_MAX) || !(secret = new_secret(r)))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    ep.id = id;
    r->audit.target_id = arena_strdup(r->arena, id);
    ep.url = b.url;
    ep.enabled = b.enabled;
    ep.description = b.description;
    ep.created_at = ep.updated_at = clock_now_ms();
    rc = seal(r, id, secret, &ep.secret, &ep.secret_len, e);
    if (rc)
        return rc;
    rc = store_hook_endpoint_create(r->store, &r->tenant, &ep, ENDPOINTS_MAX);
    if (rc == ERR_LIMIT)
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "An organization has at most %d webhook endpoints per key mode: delete "
                       "one first.",
                       ENDPOINTS_MAX);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "endpoint create failed");
    return respond_endpoint(r, &ep, secret, e);
}

/* GET /v1/webhook_endpoints */
int api_webhook_endpoints_list(struct router_req *r, struct err *e)
{
    struct store_hook_endpoint_page page;
    int64_t before_created = 0;
    const char *before_id = NULL;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc = router_query_limit(r, &limit, e);

    if (!rc)
        rc = router_query_before(r, "we", &before_created, &before_id, e);
    if (rc)
        return rc;
    rc = store_hook_endpoints_list(r->store, &r->tenant, limit, before_created, before_id, r->arena,
                                   &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "endpoint list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "webhook_endpoints");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        write_endpoint(&w, &page.items[i], NULL);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/webhook_endpoints/{id} */
int api_webhook_endpoints_get(struct router_req *r, struct err *e)
{
    struct store_hook_endpoint ep;
    int rc = read_endpoint(r, r->params[0], "id", &ep, e);
    return rc ? rc : respond_endpoint(r, &ep, NULL, e);
}

/* PATCH /v1/webhook_endpoints/{id}: any of url, events, enabled, description. */
int api_webhook_endpoints_update(struct router_req *r, struct err *e)
{
    struct endpoint_body b = {0};
    struct store_hook_endpoint ep;
    struct jb_result res;
    int rc = jb_bind(r->body, update_fields, F_N, &b, r->arena, &res, e);

    if (!rc && JB_HAS(res, F_URL))
        rc = httpc_hook_url_parse(b.url, strlen(b.url), NULL, "url", e);
    if (!rc)
        rc = read_endpoint(r, r->params[0], "id", &ep, e);
    if (rc)
        return rc;
    if (JB_HAS(res, F_URL))
        ep.url = b.url;
    if (JB_HAS(res, F_EVENTS)) {
        ep.events = events_json(r, &b.events, e, &rc);
        if (rc)
            return rc;
    }
    if (JB_HAS(res, F_ENABLED))
        ep.enabled = b.enabled;
    if (JB_HAS(res, F_DESCRIPTION))
        ep.description = b.description;
    ep.updated_at = clock_now_ms();
    rc = store_hook_endpoint_update(r->store, &r->tenant, &ep);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "webhook_endpoint_not_found", "id", "No webhook endpoint %.60s.",
                       ep.id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "endpoint update failed");
    return respond_endpoint(r, &ep, NULL, e);
}

/* DELETE /v1/webhook_endpoints/{id}: with its deliveries. */
int api_webhook_endpoints_delete(struct router_req *r, struct err *e)
{
    const char *id = r->params[0];
    json_t *body;
    int rc = store_hook_endpoint_delete(r->store, &r->tenant, id);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "webhook_endpoint_not_found", "id", "No webhook endpoint %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "endpoint delete failed");
    body = jo_object();
    jo_str(body, "id", id);
    json_object_set_new(body, "deleted", json_true());
    router_respond(r, body);
    return 0;
}

/*
 * POST /v1/webhook_endpoints/{id}/rotate_secret: a new secret, answered once. The one it
 * replaces signs too for WEBHOOKS_ROTATE_OVERLAP_MS, and so do the ones replaced before it
 * until their own end (webhooks/secrets.c): a second rotation within the day leaves the first
 * one's secret its day. A current secret that no longer opens (the server secret changed) is
 * not kept: it could not sign.
 */
int api_webhook_endpoints_rotate(struct router_req *r, struct err *e)
{
    struct webhooks_previous prev[WEBHOOKS_PREVIOUS_MAX];
    struct store_hook_endpoint ep;
    const char *secret, *current, *text;
    int64_t now = clock_now_ms(), until = 0;
    size_t n = 0;
    int rc = read_endpoint(r, r->params[0], "id", &ep, e);

    if (rc)
        return rc;
    if (!(secret = new_secret(r)))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (ep.previous_secret && ep.previous_until > now) {
        text = integ_open(KEY(api_svc(r)), &r->tenant, ep.id, SEAL_WHAT, ep.previous_secret,
                          ep.previous_len, r->arena);
        n = text ? webhooks_previous_parse(text, ep.previous_until, now, prev) : 0;
    }
    current = integ_open(KEY(api_svc(r)), &r->tenant, ep.id, SEAL_WHAT, ep.secret, ep.secret_len,
                         r->arena);
    if (current)
        n = webhooks_previous_push(prev, n, current, now + WEBHOOKS_ROTATE_OVERLAP_MS);
    ep.previous_secret = NULL;
    ep.previous_len = 0;
    ep.previous_until = 0;
    if (n) {
        text = webhooks_previous_text(prev, n, &until, r->arena);
        rc = seal(r, ep.id, text, &ep.previous_secret, &ep.previous_len, e);
        if (rc)
            return rc;
        ep.previous_until = until;
    }
    rc = seal(r, ep.id, secret, &ep.secret, &ep.secret_len, e);
    if (rc)
        return rc;
    ep.updated_at = now;
    rc = store_hook_endpoint_update(r->store, &r->tenant, &ep);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "webhook_endpoint_not_found", "id", "No webhook endpoint %.60s.",
                       ep.id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "endpoint update failed");
    return respond_endpoint(r, &ep, secret, e);
}

/* GET /v1/webhook_endpoints/{id}/deliveries: newest first, ?event_id= one event's. */
int api_webhook_endpoints_deliveries(struct router_req *r, struct err *e)
{
    struct store_hook_endpoint ep;
    const char *event_id = router_query(r, "event_id");
    int64_t before_created = 0;
    const char *before_id = NULL;
    unsigned limit;
    int rc = router_query_limit(r, &limit, e);

    if (!rc)
        rc = router_query_before(r, "wdl", &before_created, &before_id, e);
    if (!rc)
        rc = read_endpoint(r, r->params[0], "id", &ep, e);
    if (rc)
        return rc;
    return respond_deliveries(r, ep.id, event_id, limit, before_created, before_id, e);
}
