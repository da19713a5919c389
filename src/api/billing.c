/* SPDX-License-Identifier: MIT */
/*
 * billing.c: credits that are bought, and the ledger read (contract §21).
 *
 *   GET  /v1/billing/packs                 the packs of the caller's mode
 *   POST /v1/billing/checkout              a Stripe Checkout Session for one pack (owners, or a
 *                                          key whose scopes name billing)
 *   POST /v1/billing/stripe/events         Stripe's events (no key: Stripe-Signature)
 *   GET  /v1/account/credit_transactions   the ledger of the caller's mode, newest first
 *   GET  /v1/account/usage                 credits spent by work, by day or by employee
 *
 * DESIGN: the checkout asks Stripe's API (form-encoded, the mode's secret key as a bearer
 * token, an Idempotency-Key) on httpc's thread and answers from there; the session is recorded
 * with its organization, mode and credits, with the request's audit entry, before the answer.
 * An event is verified by the router's ROUTE_VERIFY step (api_billing_verify) before it counts
 * against anything; it is then applied by the store in one transaction (store_stripe_apply).
 * The secret key and the webhook secrets are never answered, logged nor stored.
 */
#include "api.h"

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/str.h"
#include "../httpc/httpc.h"
#include "../ledger/ledger.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define STRIPE_ANSWER_MAX (256u << 10) /* bytes of Stripe's answer kept */
#define HOUR_MS 3600000LL

/* The mode's index into the configuration's per-mode settings. */
static int mode_of(const struct router_req *r)
{
    return r->tenant.mode == STORE_TEST ? 1 : 0;
}

/* GET /v1/billing/packs */
int api_billing_packs(struct router_req *r, struct err *e)
{
    const struct config *c = r->env->cfg;
    int m = mode_of(r);
    struct buf b;
    struct jw w;

    buf_init(&b, 64u << 10);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "packs");
    jw_arr(&w);
    for (size_t i = 0; i < c->npacks[m]; i++) {
        jw_obj(&w);
        jw_key(&w, "price_id");
        jw_str(&w, c->packs[m][i].price_id);
        jw_key(&w, "credits");
        jw_int(&w, c->packs[m][i].credits);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* ---- Checkout ---- */

struct checkout_body {
    const char *price_id, *success_url, *cancel_url;
};

/* An absolute http or https URL without spaces or control characters. */
static bool url_ok(const char *s, size_t len)
{
    size_t scheme = len >= 8 && strncasecmp(s, "https://", 8) == 0  ? 8
                    : len >= 7 && strncasecmp(s, "http://", 7) == 0 ? 7
                                                                    : 0;
    if (!scheme || len == scheme)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

static const struct jb_field checkout_fields[] = {
    {"price_id", JB_STRING, offsetof(struct checkout_body, price_id), JB_REQUIRED, 1, 127, NULL,
     NULL, NULL},
    {"success_url", JB_STRING, offsetof(struct checkout_body, success_url), JB_REQUIRED, 1, 2048,
     NULL, url_ok, "an absolute http or https URL"},
    {"cancel_url", JB_STRING, offsetof(struct checkout_body, cancel_url), JB_REQUIRED, 1, 2048,
     NULL, url_ok, "an absolute http or https URL"},
};
const struct jb_binding api_billing_checkout_body = {checkout_fields, 3};

/* A checkout waiting for Stripe's answer. */
struct checkout {
    struct router_req *r;
    const struct config_pack *pack;
    struct buf answer;
    char *auth, *idem;
    bool too_long;
};

static int checkout_data(void *ud, long status, const char *p, size_t n)
{
    struct checkout *k = ud;
    (void)status;
    if (buf_len(&k->answer) + n > STRIPE_ANSWER_MAX) {
        k->too_long = true;
        return 1;
    }
    buf_append(&k->answer, p, n);
    return 0;
}

/* Stripe's error message of a refusal (never the request's secrets), for the log. */
static void log_refusal(long status, const char *text, size_t len)
{
    json_t *v = json_loadb(text, len, 0, NULL);
    const char *msg = json_string_value(json_object_get(json_object_get(v, "error"), "message"));
    log_warn("billing: Stripe refused the Checkout Session (HTTP %ld): %.200s", status,
             msg ? msg : "no message");
    json_decref(v);
}

/* Record the session Stripe made ('v': its answer) and answer it. */
static int checkout_answer(struct checkout *k, json_t *v, struct err *e)
{
    struct router_req *r = k->r;
    json_t *id = json_object_get(v, "id"), *url = json_object_get(v, "url");
    json_t *expires = json_object_get(v, "expires_at");
    struct store_checkout c;
    struct store *s;
    struct buf b;
    struct jw w;
    int rc;

    if (!json_is_string(id) || json_string_length(id) == 0 || json_string_length(id) > 255 ||
        !json_is_string(url) || !json_is_integer(expires)) {
        log_warn("billing: Stripe's answer has no session id, url or expires_at");
        return err_set(e, ERR_UPSTREAM, "upstream_error", NULL,
                       "Stripe's answer could not be read.");
    }
    memset(&c, 0, sizeof(c));
    c.id = json_string_value(id);
    c.tenant = r->tenant;
    c.price_id = k->pack->price_id;
    c.credits = k->pack->credits;
    c.created_by = router_actor_id(r);
    c.created_at = clock_now_ms();
    c.expires_at = json_integer_value(expires) * 1000;
    s = store_pool_get(api_svc(r)->router.pool);
    /* the request's audit entry commits with the record, on this thread's handle */
    if (r->audit.action) {
        r->audit.target_type = "checkout_session";
        r->audit.target_id = c.id;
        store_audit_arm(s, &r->audit);
    }
    rc = store_checkout_record(s, &c);
    store_audit_arm(s, NULL);
    store_pool_put(api_svc(r)->router.pool, s);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "The session could not be recorded.");
    buf_init(&b, 64u << 10);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, c.id);
    jw_key(&w, "object");
    jw_str(&w, "checkout_session");
    jw_key(&w, "url");
    jw_str(&w, json_string_value(url));
    jw_key(&w, "expires_at");
    jw_int(&w, json_integer_value(expires));
    jw_key(&w, "price_id");
    jw_str(&w, c.price_id);
    jw_key(&w, "credits");
    jw_int(&w, c.credits);
    jw_key(&w, "mode");
    jw_str(&w, c.tenant.mode == STORE_TEST ? "test" : "live");
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* Stripe answered (on httpc's thread), or could not be reached. */
static void checkout_done(void *ud, int rc, long status, const char *why)
{
    struct checkout *k = ud;
    struct router_req *r = k->r;
    struct err e;

    err_clear(&e);
    if (rc || k->too_long) {
        log_warn("billing: Stripe could not be reached: %s", k->too_long ? "its answer is too long"
                                                             : why       ? why
                                                                         : "no reason");
        rc = err_set(&e, ERR_UPSTREAM, "upstream_error", NULL, "Stripe could not be reached.");
    } else if (status != 200) {
        log_refusal(status, buf_ptr(&k->answer), buf_len(&k->answer));
        rc = err_set(&e, ERR_UPSTREAM, "upstream_error", NULL,
                     "Stripe refused to create the Checkout Session (HTTP %ld).", status);
    } else {
        json_t *v = json_loadb(buf_ptr(&k->answer), buf_len(&k->answer), 0, NULL);
        rc = checkout_answer(k, v, &e);
        json_decref(v);
    }
    buf_cleanup(&k->answer);
    free(k->auth);
    free(k->idem);
    router_async_finish(r, rc, rc ? &e : NULL);
}

/* POST /v1/billing/checkout */
int api_billing_checkout(struct router_req *r, struct err *e)
{
    const struct config *c = r->env->cfg;
    struct checkout_body in;
    struct jb_result res;
    struct checkout *k;
    struct httpc_request req;
    const char *headers[4];
    const char *idem;
    struct buf form;
    int m = mode_of(r), rc;

    if (!r->by_session && !(r->scopes & AUTH_SCOPE_BILLING))
        return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL,
                       "Buying credits needs a key whose scopes name billing; a key without "
                       "scopes does not buy.");
    memset(&in, 0, sizeof(in));
    rc = jb_bind(r->body, checkout_fields, 3, &in, r->arena, &res, e);
    if (rc)
        return rc;
    if (!c->stripe_secret_key[m][0] || !c->npacks[m])
        return err_set(e, ERR_INVALID, "integration_not_configured", NULL,
                       "Buying credits is not configured for %s mode (%s and %s).",
                       m ? "test" : "live",
                       m ? "WORKFORCE_STRIPE_TEST_SECRET_KEY" : "WORKFORCE_STRIPE_SECRET_KEY",
                       m ? "WORKFORCE_TEST_CREDIT_PACKS" : "WORKFORCE_CREDIT_PACKS");
    k = arena_calloc(r->arena, sizeof(*k));
    k->r = r;
    k->pack = ledger_pack_find(c->packs[m], c->npacks[m], in.price_id);
    if (!k->pack)
        return err_set(e, ERR_INVALID, "invalid_request", "price_id",
                       "No credit pack of %s mode has price %.127s.", m ? "test" : "live",
                       in.price_id);
    buf_init(&form, 16u << 10);
    buf_form_pair(&form, "mode", "payment");
    buf_form_pair(&form, "line_items[0][price]", k->pack->price_id);
    buf_form_pair(&form, "line_items[0][quantity]", "1");
    buf_form_pair(&form, "client_reference_id", r->tenant.org_id);
    buf_form_pair(&form, "metadata[workforce_org]", r->tenant.org_id);
    buf_form_pair(&form, "metadata[workforce_mode]", m ? "test" : "live");
    buf_form_pair(&form, "success_url", in.success_url);
    buf_form_pair(&form, "cancel_url", in.cancel_url);
    /* Stripe's own replay guard: the client's Idempotency-Key when it sent one (its replay is
     * answered by the router before this), else this request's id */
    idem = http_req_header(r->http, "Idempotency-Key");
    k->auth = httpc_bearer(c->stripe_secret_key[m]);
    k->idem = xstrdup(arena_printf(r->arena, "Idempotency-Key: workforce-%s-%.200s",
                                   r->tenant.org_id, idem ? idem : r->request_id));
    headers[0] = k->auth;
    headers[1] = "Content-Type: application/x-www-form-urlencoded";
    headers[2] = k->idem;
    headers[3] = "Accept: application/json";
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.url = arena_printf(r->arena, "%s/v1/checkout/sessions", c->stripe_api_url);
    req.headers = headers;
    req.nheaders = 4;
    req.body = buf_ptr(&form);
    req.body_len = buf_len(&form);
    req.connect_timeout_ms = 10000;
    req.timeout_ms = c->stripe_timeout_ms;
    req.peers = HTTPC_PEERS_ANY; /* the operator's own setting */
    buf_init(&k->answer, STRIPE_ANSWER_MAX);
    r->async = true;
    http_req_defer(r->http);
    /* From here 'r' belongs to httpc: checkout_done() answers (maybe at once, on a failure
     * to start too); the form was copied. */
    httpc_start(api_svc(r)->httpc, &req, checkout_data, checkout_done, k);
    buf_cleanup(&form);
    return 0;
}

/* ---- Stripe's events ---- */

/* The configured webhook secrets of both modes into 'out' (texts in 'a'); their count. */
static size_t webhook_secrets(const struct config *c, struct arena *a, const char **out, size_t max)
{
    size_t n = 0;
    for (int m = 0; m < 2; m++) {
        const char *p = c->stripe_webhook_secret[m];
        while (*p && n < max) {
            size_t len = strcspn(p, ",");
            while (len && p[len - 1] == ' ')
                len--;
            if (len)
                out[n++] = arena_strndup(a, p, len);
            p += strcspn(p, ",");
            while (*p == ',' || *p == ' ')
                p++;
        }
    }
    return n;
}

/* See api.h: the router's ROUTE_VERIFY step of the events route. */
int api_billing_verify(struct router_req *r, struct err *e)
{
    const char *secrets[32];
    size_t len = 0, n = webhook_secrets(r->env->cfg, r->arena, secrets, 32);
    const char *body = http_req_body(r->http, &len);
    int rc = ledger_stripe_verify(http_req_header(r->http, "Stripe-Signature"), body, len, secrets,
                                  n, clock_now_ms() / 1000, LEDGER_STRIPE_TOLERANCE, e);
    if (rc)
        log_warn("billing: a Stripe event was refused: %s", e->msg);
    return rc;
}

/* POST /v1/billing/stripe/events: verified already (api_billing_verify). */
int api_billing_stripe_events(struct router_req *r, struct err *e)
{
    static const char *const outcomes[] = {"applied", "replayed", "ignored", "held", "refused"};
    struct store_stripe_event ev;
    enum store_stripe_outcome out;
    const char *note = NULL;
    size_t len = 0;
    const char *body = http_req_body(r->http, &len);
    int rc = ledger_stripe_parse(body, len, r->arena, &ev, e);

    if (rc)
        return rc;
    ev.request_id = r->request_id;
    rc = store_stripe_apply(r->store, &ev, clock_now_ms(), &out, &note);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "The event could not be applied.");
    log_info("billing: Stripe event %.80s (%.60s): %s: %s", ev.id, ev.type, outcomes[out], note);
    router_respond(r, json_pack("{s:b}", "received", 1));
    return 0;
}

/* ---- The ledger read ---- */

/* GET /v1/account/credit_transactions */
int api_credit_transactions(struct router_req *r, struct err *e)
{
    struct store_credit_filter f;
    struct store_credit_tx *v;
    size_t n;
    bool more;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc;

    memset(&f, 0, sizeof(f));
    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "ctx", &f.before_t, &f.before_id, e);
    if (!rc)
        rc = router_query_since(r, &f.since, e);
    if (!rc)
        rc = router_query_enum(r, "reason", &f.reason, e);
    if (rc)
        return rc;
    f.limit = limit;
    rc = store_credit_list(r->store, &r->tenant, &f, r->arena, &v, &n, &more);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "ledger read failed");
    buf_init(&b, 16u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "credit_transactions");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        ledger_tx_write(&w, &v[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, more, n ? v[n - 1].created_at : 0, n ? v[n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

const char *const api_usage_groups[] = {"day", "employee", NULL};

/* GET /v1/account/usage?period=24h|7d|30d|90d&group_by=day|employee */
int api_account_usage(struct router_req *r, struct err *e)
{
    static const int64_t hours[] = {24, 7 * 24, 30 * 24, 90 * 24};
    struct store_usage_item *v;
    int64_t now = clock_now_ms(), from;
    size_t n;
    int p = 2, g = 0;
    bool by_employee;
    struct buf b;
    struct jw w;
    int rc = router_query_enum(r, "period", &p, e);

    if (!rc)
        rc = router_query_enum(r, "group_by", &g, e);
    if (rc)
        return rc;
    by_employee = g == 1;
    /* from the start of the hour the period began in (24 h), else of its day: the sums are
     * kept by the hour for two days, then by the day (store_credit_usage_compact) */
    from = now - hours[p] * HOUR_MS;
    from -= from % (p == 0 ? HOUR_MS : 24 * HOUR_MS);
    rc = store_credit_usage(r->store, &r->tenant, from, by_employee, r->arena, &v, &n);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "usage read failed");
    buf_init(&b, 4u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "period");
    jw_str(&w, api_stats_periods[p]);
    jw_key(&w, "group_by");
    jw_str(&w, api_usage_groups[g]);
    jw_key(&w, "from");
    jw_time(&w, from);
    jw_key(&w, "to");
    jw_time(&w, now);
    jw_key(&w, "items");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++) {
        jw_obj(&w);
        jw_key(&w, "key");
        jw_str(&w, v[i].key);
        jw_key(&w, "credits");
        jw_int(&w, v[i].credits);
        jw_key(&w, "count");
        jw_int(&w, v[i].count);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}
