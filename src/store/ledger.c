/* SPDX-License-Identifier: MIT */
/*
 * ledger.c: every change of an organization's credit balance, written once over the driver,
 * with its entry in the ledger (contract §21). What a piece of work costs, what it holds and
 * whether it may start are the rules of the ledger module (src/ledger); the store applies them
 * here, inside the transaction of the change they pay for (a chat reply, a task run, a workflow
 * step, a payment, the operator's command).
 *
 * DESIGN: credits_apply() is the one function that writes a balance, and it writes the entry
 * in the same transaction, so a balance always equals the sum of its entries' amounts (`workforce
 * credits check` and the tests verify it). The others say what change a moment of a piece of
 * work makes (a hold when it starts, its settlement when it ends). A balance never goes below
 * zero: a hold or an addition is one UPDATE ... RETURNING (the hold's condition in its WHERE);
 * a charge or a setting locks and reads the organization's row in one such statement (adding
 * 0), then writes the difference, on SQLite (one writer) and on PostgreSQL (read committed)
 * alike. The entry's time is the balance's ledger clock, moved by the same statements.
 * Each mode has its own balance column. The hourly usage sums of work are upserted with each of
 * its entries, so usage reads a few hundred rows whatever the size of the ledger. Nothing else
 * in src/ writes orgs.credits or the ledger (`make check` looks).
 */
#include "store_int.h"

#include "../core/clock.h"
#include "../core/id.h"

#include <stdio.h>
#include <string.h>

#define HOUR_MS 3600000
#define DAY_MS (24 * HOUR_MS)

/* bench/ledger.sh builds a reference server with -DWORKFORCE_BENCH_NO_LEDGER: the same server
 * writing no entries, to measure what they cost. Never a product build (the Makefile does not
 * know the flag). */
#ifdef WORKFORCE_BENCH_NO_LEDGER
#define LEDGER_ON 0
#else
#define LEDGER_ON 1
#endif

const char *const store_credit_reasons[] = {"purchase", "refund",     "dispute",
                                            "chat",     "task_run",   "workflow_step",
                                            "grant",    "adjustment", NULL};

static int64_t low_mark = 100;

/* See store.h. */
int store_credit_reason_of(const char *name)
{
    for (int i = 0; name && store_credit_reasons[i]; i++)
        if (strcmp(name, store_credit_reasons[i]) == 0)
            return i;
    return -1;
}

/* See store.h. */
void store_credit_low_set(int64_t low)
{
    low_mark = low;
}

/* Whether entries of 'reason' are work (counted in usage). */
static bool is_work(enum store_credit_reason reason)
{
    return reason == STORE_CREDIT_CHAT || reason == STORE_CREDIT_TASK_RUN ||
           reason == STORE_CREDIT_WORKFLOW_STEP;
}

/*
 * The two statements that change a balance, by mode: take $2 if the balance has it all (a
 * hold), and add $2 (negative: take; 0: lock the row and read it). Each also moves the mode's
 * ledger clock, the time of the entry it writes: now ($3), or one millisecond after the last
 * entry when that is not before now. Entries of one balance thus have distinct, increasing
 * times (two in one millisecond, a refund applied with its purchase, keep their order), on
 * one writer or several nodes alike (the row is locked by the statement).
 */
#define ADVANCE(at) at " = CASE WHEN " at " >= $3 THEN " at " + 1 ELSE $3 END"
#define TAKE_ALL(c, at)                                                                            \
    "UPDATE orgs SET " c " = " c " - $2, " ADVANCE(at) " WHERE id = $1 AND " c " >= $2"            \
                                                       " RETURNING " c ", " at
#define ADD(c, at)                                                                                 \
    "UPDATE orgs SET " c " = " c " + $2, " ADVANCE(at) " WHERE id = $1 RETURNING " c ", " at
static const char *const take_all_sql[2] = {TAKE_ALL("credits", "ledger_at"),
                                            TAKE_ALL("test_credits", "test_ledger_at")};
static const char *const add_sql[2] = {ADD("credits", "ledger_at"),
                                       ADD("test_credits", "test_ledger_at")};

/* Run one of those ($1 organization, $2 amount, $3 now): '*after' the balance after it, '*at'
 * the ledger clock, '*row' whether the row changed. */
static int balance_write(struct store *s, const char *sql, const char *org_id, int64_t amount,
                         int64_t now, int64_t *after, int64_t *at, bool *row)
{
    struct db_stmt *st = db_prepare(s, sql);
    int rc;

    *row = false;
    *after = *at = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_int64(st, 2, amount);
    db_bind_int64(st, 3, now);
    rc = db_step(st, row);
    if (!rc && *row) {
        *after = db_int64(st, 0);
        *at = db_int64(st, 1);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int credits_balance(struct store *s, const struct store_tenant *t, int64_t *out)
{
    struct db_stmt *st =
        db_prepare(s, t->mode == STORE_TEST ? "SELECT test_credits FROM orgs WHERE id = $1"
                                            : "SELECT credits FROM orgs WHERE id = $1");
    bool row = false;
    int rc;

    *out = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, t->org_id);
    rc = db_step(st, &row);
    if (!rc && row)
        *out = db_int64(st, 0);
    db_done(st);
    if (!rc && !row)
        rc = ERR_NOT_FOUND;
    return rc;
}

/* The entry 'x' of a change, its hour's usage sums when it is work, and the events it makes. */
static int entry_write(struct store *s, struct store_credit_tx *x)
{
    const char *texts[] = {x->tenant.org_id,
                           db_mode_name(x->tenant.mode),
                           x->id,
                           store_credit_reasons[x->reason],
                           x->ref_type,
                           x->ref_id,
                           x->employee_id};
    const int64_t ints[] = {x->created_at, x->amount, x->balance_after, x->shortfall};
    int rc = id_new("ctx", x->id, sizeof(x->id));

    if (!rc)
        rc = db_run(s,
                    "INSERT INTO credit_transactions (org_id, mode, id, reason, ref_type, ref_id,"
                    " employee_id, created_at, amount, balance_after, shortfall) VALUES ($1, $2,"
                    " $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                    texts, 7, ints, 4);
    if (!rc && is_work(x->reason)) {
        const char *u[] = {x->tenant.org_id, db_mode_name(x->tenant.mode),
                           x->employee_id ? x->employee_id : ""};
        const int64_t v[] = {x->created_at - x->created_at % HOUR_MS, -x->amount};
        rc = db_run(s,
                    "INSERT INTO credit_usage (org_id, mode, employee_id, hour, credits, count)"
                    " VALUES ($1, $2, $3, $4, $5, 1) ON CONFLICT (org_id, mode, hour, employee_id)"
                    " DO UPDATE SET credits = credit_usage.credits + excluded.credits, count ="
                    " credit_usage.count + 1",
                    u, 3, v, 2);
    }
    if (!rc && x->amount > 0 &&
        (x->reason == STORE_CREDIT_PURCHASE || x->reason == STORE_CREDIT_GRANT))
        rc = hook_record(s, &x->tenant, "account.credits_added", STORE_HOOK_CREDIT, x,
                         x->created_at);
    if (!rc && x->amount < 0 && x->balance_after < low_mark &&
        x->balance_after - x->amount >= low_mark)
        rc = hook_record(s, &x->tenant, "account.credits_low", STORE_HOOK_CREDIT, x, x->created_at);
    return rc;
}

/*
 * See store_int.h. The one writer of balances. A hold and an addition are one statement each;
 * a charge and a setting lock the row, read the balance and write the difference.
 */
int credits_apply(struct store *s, const struct store_tenant *t, enum credits_change change,
                  int64_t amount, const struct credits_cause *why, int64_t *applied)
{
    const int test = t->mode == STORE_TEST;
    const int64_t now = clock_now_ms();
    bool row = false;
    struct store_credit_tx x;
    int64_t have = 0, delta = 0, after = 0;
    int rc;

    *applied = 0;
    if (amount < 0)
        return ERR_INVALID;
    if (amount == 0 && change != CREDITS_SET)
        return 0;
    memset(&x, 0, sizeof(x));
    x.tenant = *t;
    x.reason = why->reason;
    x.ref_type = why->ref_type;
    x.ref_id = why->ref_id;
    x.employee_id = why->employee_id;
    if (change == CREDITS_HOLD || change == CREDITS_ADD) {
        rc = balance_write(s, change == CREDITS_HOLD ? take_all_sql[test] : add_sql[test],
                           t->org_id, amount, now, &after, &x.created_at, &row);
        if (!rc && !row)
            rc = change == CREDITS_HOLD ? ERR_LIMIT : ERR_NOT_FOUND;
        if (rc)
            return rc;
        x.amount = change == CREDITS_HOLD ? -amount : amount;
    } else {
        /* lock the row and read the balance, then write the difference */
        rc = balance_write(s, add_sql[test], t->org_id, 0, now, &have, &x.created_at, &row);
        if (!rc && !row)
            rc = ERR_NOT_FOUND;
        if (rc)
            return rc;
        if (change == CREDITS_CHARGE) {
            delta = -(amount < have ? amount : have);
            x.shortfall = amount + delta;
        } else {
            delta = amount - have;
            if (delta < 0)
                x.reason = STORE_CREDIT_ADJUSTMENT;
        }
        after = have + delta;
        if (delta != 0)
            rc =
                balance_write(s, add_sql[test], t->org_id, delta, now, &after, &x.created_at, &row);
        if (rc)
            return rc;
        x.amount = delta;
    }
    x.balance_after = after;
    if (LEDGER_ON && (x.amount != 0 || x.shortfall != 0))
        rc = entry_write(s, &x);
    if (!rc)
        *applied = x.amount < 0 ? -x.amount : x.amount;
    return rc;
}

/* See store_int.h. */
int credits_hold(struct store *s, const struct store_tenant *t, int64_t n,
                 const struct credits_cause *why, bool *held)
{
    int64_t applied = 0;
    int rc = credits_apply(s, t, CREDITS_HOLD, n, why, &applied);

    *held = false;
    if (rc == ERR_LIMIT)
        return 0;
    if (!rc)
        *held = n > 0 && applied == n;
    return rc;
}

/* See store_int.h. */
int credits_settle(struct store *s, const struct store_tenant *t, int64_t held, int64_t price,
                   const struct credits_cause *why, int64_t *charged)
{
    int64_t applied = 0;
    int rc;

    *charged = 0;
    if (price >= held) {
        /* the rest of the price, up to what the organization has left */
        rc = credits_apply(s, t, CREDITS_CHARGE, price - held, why, &applied);
        if (!rc)
            *charged = held + applied;
    } else {
        /* less than was held (a failed or discarded piece of work: nothing): the difference
         * goes back */
        rc = credits_apply(s, t, CREDITS_ADD, held - price, why, &applied);
        if (!rc)
            *charged = price;
    }
    return rc;
}

/* See store.h. */
int store_credit_balance(struct store *s, const struct store_tenant *t, int64_t *out)
{
    return credits_balance(s, t, out);
}

/* See store.h. */
int store_credit_list(struct store *s, const struct store_tenant *t,
                      const struct store_credit_filter *f, struct arena *a,
                      struct store_credit_tx **out, size_t *n, bool *more)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT id, amount, balance_after, shortfall, reason, ref_type, ref_id, employee_id,"
           " created_at FROM credit_transactions WHERE org_id = $1 AND mode = $2 AND"
           " (CAST($3 AS TEXT) IS NULL OR reason = $3) AND created_at >= $4 AND"
           " (CAST($6 AS TEXT) IS NULL OR (created_at, id) < ($5, $6))"
           " ORDER BY created_at DESC, id DESC LIMIT $7");
    struct store_credit_tx *v = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*v));
    size_t len = 0;
    bool row = false;
    int rc;

    *n = 0;
    *more = false;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, f->reason >= 0 ? store_credit_reasons[f->reason] : NULL);
    db_bind_int64(st, 4, f->since);
    db_bind_int64(st, 5, f->before_t);
    db_bind_text(st, 6, f->before_id);
    db_bind_int64(st, 7, (int64_t)f->limit + 1);
    while (!(rc = db_step(st, &row)) && row && len <= f->limit) {
        struct store_credit_tx *x = &v[len++];
        memset(x, 0, sizeof(*x));
        db_copy(st, 0, x->id, sizeof(x->id));
        x->tenant = *t;
        x->amount = db_int64(st, 1);
        x->balance_after = db_int64(st, 2);
        x->shortfall = db_int64(st, 3);
        x->reason = store_credit_reason_of(db_text(st, 4));
        if ((int)x->reason < 0)
            x->reason = STORE_CREDIT_ADJUSTMENT; /* the table's CHECK allows no other */
        x->ref_type = db_arena_text(a, st, 5);
        x->ref_id = db_arena_text(a, st, 6);
        x->employee_id = db_arena_text(a, st, 7);
        x->created_at = db_int64(st, 8);
    }
    db_done(st);
    if (len > f->limit) {
        *more = true;
        len = f->limit;
    }
    *out = v;
    *n = len;
    return rc;
}

/* See store.h. The hourly sums since 'from', grouped as asked; a day is keyed by the date of
 * its hours (UTC). */
int store_credit_usage(struct store *s, const struct store_tenant *t, int64_t from,
                       bool by_employee, struct arena *a, struct store_usage_item **out, size_t *n)
{
    struct db_stmt *st = db_prepare(
        s, by_employee ? "SELECT employee_id, sum(credits), sum(count) FROM credit_usage WHERE"
                         " org_id = $1 AND mode = $2 AND hour >= $3 GROUP BY employee_id"
                         " ORDER BY sum(credits) DESC, employee_id"
                       : "SELECT hour - hour % 86400000, sum(credits), sum(count) FROM"
                         " credit_usage WHERE org_id = $1 AND mode = $2 AND hour >= $3"
                         " GROUP BY hour - hour % 86400000 ORDER BY 1");
    size_t len = 0, cap = 16;
    struct store_usage_item *v = arena_alloc(a, cap * sizeof(*v));
    bool row = false;
    int rc;

    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, from);
    while (!(rc = db_step(st, &row)) && row) {
        if (len == cap) {
            struct store_usage_item *w = arena_alloc(a, 2 * cap * sizeof(*w));
            memcpy(w, v, cap * sizeof(*w));
            v = w;
            cap *= 2;
        }
        if (by_employee) {
            v[len].key = db_arena_text(a, st, 0);
        } else {
            char *day = arena_alloc(a, 32);
            clock_fmt_iso(db_int64(st, 0), day, 32);
            day[10] = '\0'; /* YYYY-MM-DD */
            v[len].key = day;
        }
        v[len].credits = db_int64(st, 1);
        v[len].count = db_int64(st, 2);
        len++;
    }
    db_done(st);
    *out = v;
    *n = len;
    return rc;
}

/* See store.h. One read transaction: every balance of both modes against the sum of its
 * entries. */
int store_credit_check(struct store *s,
                       void (*report)(void *ud, const char *org_id, const char *mode,
                                      int64_t balance, int64_t sum),
                       void *ud, int64_t *bad)
{
    struct db_stmt *st;
    bool row = false;
    int rc = db_begin(s, DB_TX_READ);

    *bad = 0;
    if (rc)
        return rc;
    st = db_prepare(
        s, "SELECT o.id, m.mode, CASE m.mode WHEN 'live' THEN o.credits ELSE o.test_credits END,"
           " coalesce((SELECT sum(amount) FROM credit_transactions x WHERE x.org_id = o.id AND"
           " x.mode = m.mode), 0) FROM orgs o CROSS JOIN (SELECT 'live' AS mode UNION ALL SELECT"
           " 'test') m ORDER BY o.id, m.mode");
    if (!st)
        rc = ERR_STORE;
    while (!rc && !(rc = db_step(st, &row)) && row) {
        int64_t balance = db_int64(st, 2), sum = db_int64(st, 3);
        if (balance != sum) {
            ++*bad;
            if (report)
                report(ud, db_text(st, 0), db_text(st, 1), balance, sum);
        }
    }
    if (st)
        db_done(st);
    if ((rc ? db_rollback(s) : db_commit(s)) && !rc)
        rc = ERR_STORE;
    return rc;
}

/*
 * See store.h. The hours of the days that ended more than a day ago are folded into one row
 * per day (at the day's start), in one transaction that first moves the mark of the one row
 * of credit_usage_compacted: a second node doing the same waits for that row, then finds the
 * mark moved and does nothing.
 */
int store_credit_usage_compact(struct store *s, int64_t now, int64_t *folded)
{
    const int64_t before = now - now % DAY_MS - DAY_MS;
    struct db_stmt *st;
    bool row = false;
    int64_t mine = 0;
    int rc;

    *folded = 0;
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    st = db_prepare(s, "UPDATE credit_usage_compacted SET before_at = $1 WHERE id = 1 AND"
                       " before_at < $1");
    if (!st) {
        rc = ERR_STORE;
    } else {
        db_bind_int64(st, 1, before);
        rc = db_step(st, &row);
        if (!rc)
            mine = db_changes(st);
        db_done(st);
    }
    if (!rc && mine)
        rc = db_run(s,
                    "INSERT INTO credit_usage (org_id, mode, hour, employee_id, credits, count)"
                    " SELECT org_id, mode, hour - hour % 86400000, employee_id, sum(credits),"
                    " sum(count) FROM credit_usage WHERE hour < $1 AND hour % 86400000 <> 0"
                    " GROUP BY org_id, mode, hour - hour % 86400000, employee_id"
                    " ON CONFLICT (org_id, mode, hour, employee_id) DO UPDATE SET credits ="
                    " credit_usage.credits + excluded.credits, count = credit_usage.count +"
                    " excluded.count",
                    NULL, 0, &before, 1);
    if (!rc && mine) {
        st = db_prepare(s, "DELETE FROM credit_usage WHERE hour < $1 AND hour % 86400000 <> 0");
        if (!st) {
            rc = ERR_STORE;
        } else {
            db_bind_int64(st, 1, before);
            rc = db_step(st, &row);
            if (!rc)
                *folded = db_changes(st);
            db_done(st);
        }
    }
    if (!rc)
        rc = db_commit(s);
    if (rc) {
        db_rollback(s);
        *folded = 0;
    }
    return rc;
}
