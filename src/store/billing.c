/* SPDX-License-Identifier: MIT */
/*
 * billing.c: the Checkout Sessions this server created, and Stripe's events applied to them
 * (contract §21).
 *
 * DESIGN: an event is applied in one write transaction that first inserts its id into
 * stripe_events (ON CONFLICT DO NOTHING: a replay, or the same event arriving twice at once on
 * two nodes, finds the row and changes nothing), then locks the session it names (a write to
 * its row) and changes the balance through credits_apply(), with the ledger entry, the audit
 * entry (actor stripe) and the events in the same transaction. What a purchase adds is the
 * credits recorded with its session, never a number of the event; a refund or a dispute takes
 * back its share of those, less what the payment already gave back ('taken_back', which counts
 * what could not be taken too, so a later refund never asks twice), never below a balance of 0
 * (the rest is the entry's shortfall). A take-back whose purchase has not arrived is kept
 * 'held' with what it needs, and applied in the transaction of that purchase.
 */
#include "store_int.h"

#include "../core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* See store.h. */
int store_checkout_record(struct store *s, const struct store_checkout *c)
{
    const char *texts[] = {c->id, c->tenant.org_id, db_mode_name(c->tenant.mode), c->price_id,
                           c->created_by};
    const int64_t ints[] = {c->credits, c->created_at, c->expires_at};
    return db_run(s,
                  "INSERT INTO checkout_sessions (id, org_id, mode, price_id, created_by, credits,"
                  " created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                  texts, 5, ints, 3);
}

/* A session as an event finds it, its row locked. */
struct session {
    char id[256];
    struct store_tenant tenant;
    int64_t credits, paid_at, taken_back;
    char payment_intent[256];
};

/* Lock and read the session whose column 'by' ("id" or "payment_intent": a literal) is 'v';
 * ERR_NOT_FOUND when there is none. */
static int session_lock(struct store *s, const char *by, const char *v, struct session *out)
{
    char sql[320];
    struct db_stmt *st;
    bool row = false;
    int rc;

    snprintf(sql, sizeof(sql),
             "UPDATE checkout_sessions SET id = id WHERE %s = $1 RETURNING id, org_id, mode,"
             " credits, coalesce(paid_at, 0), taken_back, coalesce(payment_intent, '')",
             by);
    st = db_prepare(s, sql);
    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, v);
    rc = db_step(st, &row);
    if (!rc && row) {
        db_copy(st, 0, out->id, sizeof(out->id));
        db_copy(st, 1, out->tenant.org_id, sizeof(out->tenant.org_id));
        out->tenant.mode = db_mode(db_text(st, 2));
        out->credits = db_int64(st, 3);
        out->paid_at = db_int64(st, 4);
        out->taken_back = db_int64(st, 5);
        db_copy(st, 6, out->payment_intent, sizeof(out->payment_intent));
    }
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* The audit entry of a change a Stripe event made, in the current transaction. */
static int audit_stripe(struct store *s, const struct store_tenant *t, const char *event_id,
                        const char *action, const char *target_type, const char *target_id,
                        const char *request_id)
{
    struct store_audit a;

    memset(&a, 0, sizeof(a));
    a.tenant = *t;
    a.actor_type = STORE_ACTOR_STRIPE;
    a.actor_id = event_id;
    a.actor_label = "Stripe";
    a.action = action;
    a.target_type = target_type;
    a.target_id = target_id;
    a.request_id = request_id;
    return audit_insert(s, &a);
}

/* Take back from session 'x' what a refund ('kind' REFUND: its share of 'refunded' of
 * 'amount') or a dispute (all of it) asks, less what the payment gave back already. '*took'
 * whether anything was asked. */
static int take_back(struct store *s, struct session *x, enum store_stripe_kind kind,
                     const char *event_id, const char *object_id, int64_t amount, int64_t refunded,
                     const char *request_id, bool *took)
{
    const bool dispute = kind == STORE_STRIPE_DISPUTE;
    const struct credits_cause why = {dispute ? STORE_CREDIT_DISPUTE : STORE_CREDIT_REFUND,
                                      dispute ? "dispute" : "charge", object_id, NULL};
    int64_t target, want, applied = 0;
    int rc;

    *took = false;
    target =
        dispute || amount <= 0
            ? x->credits
            : (int64_t)((__int128)x->credits * (refunded < amount ? refunded : amount) / amount);
    want = target - x->taken_back;
    if (want <= 0)
        return 0;
    rc = credits_apply(s, &x->tenant, CREDITS_CHARGE, want, &why, &applied);
    if (!rc) {
        const char *texts[] = {x->id};
        const int64_t ints[] = {want};
        rc = db_run(s, "UPDATE checkout_sessions SET taken_back = taken_back + $2 WHERE id = $1",
                    texts, 1, ints, 1);
    }
    if (!rc)
        rc = audit_stripe(s, &x->tenant, event_id, dispute ? "credits.dispute" : "credits.refund",
                          dispute ? "dispute" : "charge", object_id, request_id);
    if (!rc) {
        x->taken_back += want;
        *took = true;
    }
    return rc;
}

/* Record what became of event 'id'. */
static int event_mark(struct store *s, const char *id, const char *status, const char *note,
                      const struct store_stripe_event *ev, int64_t now)
{
    const char *texts[] = {id, status, note, ev ? ev->object_id : NULL,
                           ev ? ev->payment_intent : NULL};
    const int64_t ints[] = {ev ? ev->amount : 0, ev ? ev->amount_refunded : 0, now};
    return db_run(s,
                  "UPDATE stripe_events SET status = $2, note = $3, object_id = coalesce($4,"
                  " object_id), payment_intent = coalesce($5, payment_intent), amount ="
                  " CASE WHEN $6 > 0 THEN $6 ELSE amount END, amount_refunded = CASE WHEN $6 > 0"
                  " THEN $7 ELSE amount_refunded END, applied_at = CASE WHEN $2 = 'applied' THEN"
                  " $8 ELSE applied_at END WHERE id = $1",
                  texts, 5, ints, 3);
}

/* The take-backs held for the payment of session 'x', applied now that it is paid. */
static int apply_held(struct store *s, struct session *x, const char *request_id, int64_t now)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT id, type, object_id, amount, amount_refunded FROM stripe_events WHERE"
                      " payment_intent = $1 AND status = 'held' ORDER BY received_at, id");
    struct held {
        char id[256], object_id[256];
        enum store_stripe_kind kind;
        int64_t amount, refunded;
    } *v = NULL;
    size_t n = 0;
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, x->payment_intent);
    while (!(rc = db_step(st, &row)) && row) {
        struct held *h;
        v = xrealloc(v, (n + 1) * sizeof(*v));
        h = &v[n++];
        db_copy(st, 0, h->id, sizeof(h->id));
        h->kind = strcmp(db_text(st, 1), "charge.dispute.created") == 0 ? STORE_STRIPE_DISPUTE
                                                                        : STORE_STRIPE_REFUND;
        db_copy(st, 2, h->object_id, sizeof(h->object_id));
        h->amount = db_int64(st, 3);
        h->refunded = db_int64(st, 4);
    }
    db_done(st);
    for (size_t i = 0; !rc && i < n; i++) {
        bool took;
        rc = take_back(s, x, v[i].kind, v[i].id, v[i].object_id, v[i].amount, v[i].refunded,
                       request_id, &took);
        if (!rc)
            rc = event_mark(s, v[i].id, took ? "applied" : "ignored",
                            took ? "applied when its purchase arrived"
                                 : "its purchase had given back all it may",
                            NULL, now);
    }
    free(v);
    return rc;
}

/* The event's effect, its row inserted: '*out' and '*note'. */
static int apply_in(struct store *s, const struct store_stripe_event *ev, int64_t now,
                    enum store_stripe_outcome *out, const char **note)
{
    struct session x;
    const char *status = "ignored";
    int rc = 0;

    *out = STORE_STRIPE_IGNORED;
    *note = "this type of event changes no credits";
    if (ev->kind == STORE_STRIPE_PAID || ev->kind == STORE_STRIPE_UNPAID) {
        rc = session_lock(s, "id", ev->object_id, &x);
        if (rc == ERR_NOT_FOUND) {
            *out = STORE_STRIPE_REFUSED;
            *note = "not a Checkout Session this server created";
            rc = 0;
        } else if (!rc && (x.tenant.mode == STORE_LIVE) != ev->livemode) {
            *out = STORE_STRIPE_REFUSED;
            *note = "its livemode does not match the mode of the session";
        } else if (!rc && (!ev->org_id || strcmp(ev->org_id, x.tenant.org_id) != 0)) {
            *out = STORE_STRIPE_REFUSED;
            *note = "its client_reference_id is not the organization of the session";
        } else if (!rc) {
            if (ev->payment_intent && !x.payment_intent[0]) {
                const char *texts[] = {x.id, ev->payment_intent};
                rc = db_run(s, "UPDATE checkout_sessions SET payment_intent = $2 WHERE id = $1",
                            texts, 2, NULL, 0);
                snprintf(x.payment_intent, sizeof(x.payment_intent), "%s", ev->payment_intent);
            }
            if (!rc && ev->kind == STORE_STRIPE_UNPAID) {
                *note = "not paid yet: its credits come with the payment";
            } else if (!rc && x.paid_at) {
                *note = "its session's credits were added already";
            } else if (!rc) {
                const struct credits_cause why = {STORE_CREDIT_PURCHASE, "checkout_session", x.id,
                                                  NULL};
                const char *texts[] = {x.id};
                int64_t applied;
                rc = db_run(s, "UPDATE checkout_sessions SET paid_at = $2 WHERE id = $1", texts, 1,
                            &now, 1);
                if (!rc)
                    rc = credits_apply(s, &x.tenant, CREDITS_ADD, x.credits, &why, &applied);
                if (!rc)
                    rc = audit_stripe(s, &x.tenant, ev->id, "credits.purchase", "checkout_session",
                                      x.id, ev->request_id);
                if (!rc && x.payment_intent[0])
                    rc = apply_held(s, &x, ev->request_id, now);
                *out = STORE_STRIPE_APPLIED;
                *note = "its pack's credits were added";
            }
        }
    } else if (ev->kind == STORE_STRIPE_REFUND || ev->kind == STORE_STRIPE_DISPUTE) {
        rc = ev->payment_intent ? session_lock(s, "payment_intent", ev->payment_intent, &x)
                                : ERR_NOT_FOUND;
        if (rc == ERR_NOT_FOUND || (!rc && !x.paid_at)) {
            *out = ev->payment_intent ? STORE_STRIPE_HELD : STORE_STRIPE_REFUSED;
            *note = ev->payment_intent ? "held: its purchase has not arrived; applied when it does"
                                       : "it names no payment_intent";
            rc = 0;
        } else if (!rc && (x.tenant.mode == STORE_LIVE) != ev->livemode) {
            *out = STORE_STRIPE_REFUSED;
            *note = "its livemode does not match the mode of the session";
        } else if (!rc) {
            bool took;
            rc = take_back(s, &x, ev->kind, ev->id, ev->object_id, ev->amount, ev->amount_refunded,
                           ev->request_id, &took);
            *out = took ? STORE_STRIPE_APPLIED : STORE_STRIPE_IGNORED;
            *note = took ? "its share of the purchase was taken back"
                         : "its purchase had given back all it may";
        }
    }
    if (*out == STORE_STRIPE_APPLIED)
        status = "applied";
    else if (*out == STORE_STRIPE_HELD)
        status = "held";
    else if (*out == STORE_STRIPE_REFUSED)
        status = "refused";
    if (!rc)
        rc = event_mark(s, ev->id, status, *note, ev, now);
    return rc;
}

/* See store.h. */
int store_stripe_apply(struct store *s, const struct store_stripe_event *ev, int64_t now,
                       enum store_stripe_outcome *out, const char **note)
{
    const char *texts[] = {ev->id, ev->type};
    const int64_t ints[] = {ev->livemode, now};
    struct db_stmt *st;
    bool row = false;
    int64_t fresh = 0;
    int rc;

    *out = STORE_STRIPE_REPLAYED;
    *note = "received before";
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    st = db_prepare(s, "INSERT INTO stripe_events (id, type, livemode, status, received_at)"
                       " VALUES ($1, $2, $3, 'ignored', $4) ON CONFLICT (id) DO NOTHING");
    if (!st) {
        rc = ERR_STORE;
    } else {
        db_bind_text(st, 1, texts[0]);
        db_bind_text(st, 2, texts[1]);
        db_bind_int64(st, 3, ints[0]);
        db_bind_int64(st, 4, ints[1]);
        rc = db_step(st, &row);
        if (!rc)
            fresh = db_changes(st);
        db_done(st);
    }
    if (!rc && fresh)
        rc = apply_in(s, ev, now, out, note);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}
