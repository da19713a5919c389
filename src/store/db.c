/* SPDX-License-Identifier: MIT */
/*
 * db.c: what the store's operations written once (orgs.c, ...) repeat over a driver
 * (driver.h): binding the tenant, copying columns out, running a statement that returns no
 * row, and the names the schema keeps for modes and tiers. Each call goes to the driver of the
 * statement or the store.
 */
#include "store_int.h"

#include <stdio.h>
#include <string.h>

/* See driver.h. */
struct db_stmt *db_prepare(struct store *s, const char *sql)
{
    struct db_stmt *st = s->drv->prepare(s, sql);
    if (st) {
        st->s = s;
        st->writes = strncmp(sql, "INSERT", 6) == 0 || strncmp(sql, "UPDATE", 6) == 0 ||
                     strncmp(sql, "DELETE", 6) == 0;
    }
    return st;
}

/*
 * The audit context armed on 's' (store_audit_arm) waits for the first change: a write
 * transaction's commit writes it first (db_commit), and a write statement run alone while it
 * waits is given a transaction of its own (run_alone), so the entry and the change commit
 * together or not at all.
 */
static bool audit_waits(const struct store *s)
{
    return s->audit && !s->audit->written;
}

/* Write the armed entry now, in the open transaction. */
static int audit_now(struct store *s)
{
    s->audit->written = true; /* audit_insert's own statement does not wait for itself */
    return audit_insert(s, s->audit);
}

/* Step 'st' (a write, no transaction open, an entry waiting) in a transaction with the entry
 * when it changed a row; 'one': ERR_NOT_FOUND when it changed none. */
static int run_alone(struct db_stmt *st, bool one)
{
    struct store *s = st->s;
    bool row;
    int64_t changed = 0;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc) {
        db_done(st);
        return rc;
    }
    rc = db_step(st, &row);
    if (!rc)
        changed = db_changes(st);
    db_done(st);
    if (!rc && one && changed == 0)
        rc = ERR_NOT_FOUND;
    if (rc) {
        db_rollback(s);
        return rc;
    }
    if (changed == 0)
        return db_rollback(s);
    rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See driver.h. */
void db_bind_text(struct db_stmt *st, int i, const char *v)
{
    st->drv->bind_text(st, i, v, (size_t)-1);
}

/* See driver.h. */
void db_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    st->drv->bind_int64(st, i, v);
}

/* See driver.h. */
void db_bind_blob(struct db_stmt *st, int i, const void *v, size_t len)
{
    st->drv->bind_blob(st, i, v, len);
}

/* See driver.h. */
void db_bind_null(struct db_stmt *st, int i)
{
    st->drv->bind_null(st, i);
}

/* See driver.h. */
void db_bind_tenant(struct db_stmt *st, const struct store_tenant *t)
{
    db_bind_text(st, 1, t->org_id);
    db_bind_text(st, 2, db_mode_name(t->mode));
}

/* See driver.h. */
int db_step(struct db_stmt *st, bool *row)
{
    return st->drv->step(st, row);
}

/* See driver.h. */
int64_t db_int64(struct db_stmt *st, int col)
{
    return st->drv->col_int64(st, col);
}

/* See driver.h. */
const char *db_text(struct db_stmt *st, int col)
{
    return st->drv->col_text(st, col, NULL);
}

/* See driver.h. */
void db_copy(struct db_stmt *st, int col, char *dst, size_t n)
{
    const char *v = st->drv->col_text(st, col, NULL);
    snprintf(dst, n, "%s", v ? v : "");
}

/* See driver.h. */
const char *db_arena_text(struct arena *a, struct db_stmt *st, int col)
{
    size_t len;
    const char *v = st->drv->col_text(st, col, &len);
    return v ? arena_strndup(a, v, len) : NULL;
}

/* See driver.h. */
const void *db_blob(struct db_stmt *st, int col, size_t *len)
{
    return st->drv->col_blob(st, col, len);
}

/* See driver.h. */
int64_t db_changes(struct db_stmt *st)
{
    return st->drv->changes(st);
}

/* See driver.h. */
void db_done(struct db_stmt *st)
{
    st->drv->done(st);
}

/* See driver.h. */
int db_exec(struct db_stmt *st)
{
    bool row;
    int rc;
    if (st->writes && !st->s->in_tx && audit_waits(st->s))
        return run_alone(st, false);
    rc = db_step(st, &row);
    db_done(st);
    return rc;
}

/* See driver.h. */
int db_exec_one(struct db_stmt *st)
{
    bool row;
    int rc;
    if (st->writes && !st->s->in_tx && audit_waits(st->s))
        return run_alone(st, true);
    rc = db_step(st, &row);
    if (!rc && db_changes(st) == 0)
        rc = ERR_NOT_FOUND;
    db_done(st);
    return rc;
}

/* See driver.h. */
int db_run(struct store *s, const char *sql, const char *const *texts, size_t nt,
           const int64_t *ints, size_t ni)
{
    struct db_stmt *st = db_prepare(s, sql);
    if (!st)
        return ERR_STORE;
    for (size_t i = 0; i < nt; i++)
        db_bind_text(st, (int)i + 1, texts[i]);
    for (size_t i = 0; i < ni; i++)
        db_bind_int64(st, (int)(nt + i) + 1, ints[i]);
    return db_exec(st);
}

/* See driver.h. */
int db_one(struct store *s, const char *sql, const struct store_tenant *t, const char *const *texts,
           size_t n, db_read_fn read, struct arena *a, void *out)
{
    struct db_stmt *st = db_prepare(s, sql);
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    for (size_t i = 0; i < n; i++)
        db_bind_text(st, (int)i + 3, texts[i]);
    rc = db_step(st, &row);
    if (!rc && row)
        read(st, a, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See driver.h. */
int db_begin(struct store *s, enum db_tx kind)
{
    int rc = s->drv->begin(s, kind);
    if (!rc) {
        s->in_tx = true;
        s->tx_write = kind == DB_TX_WRITE;
    }
    return rc;
}

/* See driver.h. */
enum db_dialect db_dialect(struct store *s)
{
    return s->drv->dialect;
}

/* See driver.h. */
int db_commit(struct store *s)
{
    bool wrote = false;
    int rc = 0;
    if (s->in_tx && s->tx_write && audit_waits(s)) {
        wrote = true;
        rc = audit_now(s);
    }
    if (!rc)
        rc = s->drv->commit(s);
    if (rc && wrote)
        s->audit->written = false; /* nothing of it was kept: the caller rolls back */
    if (!rc)
        s->in_tx = false;
    return rc;
}

/* See driver.h. */
int db_rollback(struct store *s)
{
    s->in_tx = false;
    return s->drv->rollback(s);
}

static const char *const mode_names[] = {"live", "test"};
static const char *const tier_names[] = {"starter", "manager", "agency"};

/* See driver.h. */
const char *db_mode_name(enum store_mode m)
{
    return mode_names[m == STORE_TEST];
}

/* See driver.h. */
enum store_mode db_mode(const char *name)
{
    return name && strcmp(name, "test") == 0 ? STORE_TEST : STORE_LIVE;
}

/* See driver.h. */
const char *db_tier_name(int tier)
{
    return tier_names[tier >= 0 && tier < 3 ? tier : 0];
}

/* See driver.h. */
int db_tier(const char *name)
{
    for (int i = 0; i < 3; i++) {
        if (name && strcmp(name, tier_names[i]) == 0)
            return i;
    }
    return 0;
}
