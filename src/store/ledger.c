/* SPDX-License-Identifier: MIT */
/*
 * ledger.c: every change of an organization's credit balance, written once over the driver.
 * What a piece of work costs, what it holds and whether it may start are the rules of the
 * ledger module (src/ledger); the store applies them here, inside the transaction of the
 * change they pay for (a chat reply, a task run, a workflow step, the operator's command).
 *
 * DESIGN: credits_apply() is the one function that writes a balance; the others say what
 * change a moment of a piece of work makes (a hold when it starts, its settlement when it
 * ends). A balance never goes below zero: the organization's row is locked first (a write to
 * it), and the balance read after that is the one the change applies to, on SQLite (one
 * writer) and on PostgreSQL (read committed) alike. Nothing else in src/ writes orgs.credits
 * (`make check` looks).
 */
#include "store_int.h"

/* The balance of 'org_id', read after its row was locked by a write of this transaction. */
static int balance_read(struct store *s, const char *org_id, int64_t *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT credits FROM orgs WHERE id = $1");
    bool row = false;
    int rc;

    *out = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    rc = db_step(st, &row);
    if (!rc && row)
        *out = db_int64(st, 0);
    db_done(st);
    if (!rc && !row)
        rc = ERR_NOT_FOUND;
    return rc;
}

/* Run 'sql' with the organization and the amount bound ($1, $2); '*n' rows changed. */
static int balance_write(struct store *s, const char *sql, const char *org_id, int64_t amount,
                         int64_t *n)
{
    struct db_stmt *st = db_prepare(s, sql);
    bool row;
    int rc;

    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_int64(st, 2, amount);
    rc = db_step(st, &row);
    if (!rc)
        *n = db_changes(st);
    db_done(st);
    return rc;
}

/*
 * See store_int.h. The one writer of balances. A hold and a giving back are one statement
 * each (a hold's condition is in its WHERE); a charge and a setting lock the row, read the
 * balance and write the difference.
 */
int credits_apply(struct store *s, const char *org_id, enum credits_change change, int64_t amount,
                  int64_t *applied)
{
    int64_t have = 0, delta = 0, n = 0;
    int rc;

    *applied = 0;
    if (amount < 0)
        return ERR_INVALID;
    if (amount == 0 && change != CREDITS_SET)
        return 0;
    if (change == CREDITS_HOLD || change == CREDITS_GIVE_BACK) {
        rc = balance_write(s,
                           change == CREDITS_HOLD
                               ? "UPDATE orgs SET credits = credits - $2 WHERE id = $1 AND"
                                 " credits >= $2"
                               : "UPDATE orgs SET credits = credits + $2 WHERE id = $1",
                           org_id, amount, &n);
        if (!rc && n == 0 && change == CREDITS_HOLD)
            rc = ERR_LIMIT;
        if (!rc && n > 0)
            *applied = amount;
        return rc;
    }
    {
        const char *org[] = {org_id};
        rc = db_run(s, "UPDATE orgs SET credits = credits WHERE id = $1", org, 1, NULL, 0);
    }
    if (!rc)
        rc = balance_read(s, org_id, &have);
    if (rc)
        return rc;
    delta = change == CREDITS_CHARGE ? -(amount < have ? amount : have) : amount - have;
    if (delta != 0)
        rc = balance_write(s, "UPDATE orgs SET credits = credits + $2 WHERE id = $1", org_id, delta,
                           &n);
    if (!rc)
        *applied = delta < 0 ? -delta : delta;
    return rc;
}

/* See store_int.h. */
int credits_hold(struct store *s, const char *org_id, int64_t n, bool *held)
{
    int64_t applied = 0;
    int rc = credits_apply(s, org_id, CREDITS_HOLD, n, &applied);

    *held = false;
    if (rc == ERR_LIMIT)
        return 0;
    if (!rc)
        *held = n > 0 && applied == n;
    return rc;
}

/* See store_int.h. */
int credits_settle(struct store *s, const char *org_id, int64_t held, int64_t price,
                   int64_t *charged)
{
    int64_t applied = 0;
    int rc;

    *charged = 0;
    if (price >= held) {
        /* the rest of the price, up to what the organization has left */
        rc = credits_apply(s, org_id, CREDITS_CHARGE, price - held, &applied);
        if (!rc)
            *charged = held + applied;
    } else {
        /* less than was held (a failed or discarded piece of work: nothing): the difference
         * goes back */
        rc = credits_apply(s, org_id, CREDITS_GIVE_BACK, held - price, &applied);
        if (!rc)
            *charged = price;
    }
    return rc;
}

/* See store_int.h. */
int credits_balance(struct store *s, const char *org_id, int64_t *out)
{
    return balance_read(s, org_id, out);
}
