/* SPDX-License-Identifier: MIT */
/*
 * orgs.c: organizations, their API keys, and the employees an organization starts with, written
 * once over the driver (driver.h) for every database. The SQL is read alike by SQLite and
 * PostgreSQL ($n parameters, coalesce); a key's hash is a 32-byte blob (BYTEA).
 */
#include "store_int.h"

#include "../core/clock.h"

#include <stdio.h>
#include <string.h>

#define ORG_COLS ORGS_COLS("")
#define KEY_COLS                                                                                   \
    "k.id, k.org_id, k.mode, k.hash, k.last4, k.scopes, k.created_at, coalesce(k.expires_at, 0),"  \
    " coalesce(k.revoked_at, 0), k.name, coalesce(k.created_by, ''), coalesce(k.last_used_at, 0)"

/* See store_int.h. */
void orgs_cols(struct db_stmt *st, int col, struct store_org *out)
{
    memset(out, 0, sizeof(*out));
    db_copy(st, col, out->id, sizeof(out->id));
    db_copy(st, col + 1, out->slug, sizeof(out->slug));
    out->tier = db_tier(db_text(st, col + 2));
    out->credits = db_int64(st, col + 3);
    out->created_at = db_int64(st, col + 4);
    out->test_credits = db_int64(st, col + 5);
}

/* The organization whose column 'by' (id or slug, a literal of this file) is 'v'. */
static int read_org(struct store *s, const char *sql, const char *v, struct store_org *out)
{
    struct db_stmt *st = db_prepare(s, sql);
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, v);
    rc = db_step(st, &row);
    if (!rc && row)
        orgs_cols(st, 0, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int orgs_get_by_slug(struct store *s, const char *slug, struct store_org *out)
{
    return read_org(s, "SELECT " ORG_COLS " FROM orgs WHERE slug = $1", slug, out);
}

/* See store_int.h. */
int orgs_get(struct store *s, const char *id, struct store_org *out)
{
    return read_org(s, "SELECT " ORG_COLS " FROM orgs WHERE id = $1", id, out);
}

/* See store_int.h: the first two rows tell whether there is exactly one. */
int orgs_only(struct store *s, struct store_org *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " ORG_COLS " FROM orgs ORDER BY id LIMIT 2");
    struct store_org first;
    bool row = false;
    int n = 0, rc;
    if (!st)
        return ERR_STORE;
    while (!(rc = db_step(st, &row)) && row) {
        if (n++ == 0)
            orgs_cols(st, 0, &first);
    }
    db_done(st);
    if (rc)
        return rc;
    if (n != 1)
        return ERR_NOT_FOUND;
    *out = first;
    return 0;
}

/* See store_int.h. */
int employees_insert(struct store *s, const struct store_tenant *t,
                     const struct store_employee *emp)
{
    struct db_stmt *st =
        db_prepare(s, "INSERT INTO employees (id, org_id, mode, name, role, category, tier,"
                      " capabilities, description, instructions, model, disabled, created_at,"
                      " updated_at, tools) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,"
                      " $12, $13, $13, $14)");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, emp->id);
    db_bind_text(st, 2, t->org_id);
    db_bind_text(st, 3, db_mode_name(t->mode));
    db_bind_text(st, 4, emp->name);
    db_bind_text(st, 5, emp->role);
    db_bind_text(st, 6, emp->category);
    db_bind_text(st, 7, emp->tier);
    db_bind_text(st, 8, emp->capabilities ? emp->capabilities : "[]");
    db_bind_text(st, 9, emp->description ? emp->description : "");
    db_bind_text(st, 10, emp->instructions ? emp->instructions : "");
    db_bind_text(st, 11, emp->model);
    db_bind_int64(st, 12, emp->status == STORE_EMP_OFFLINE);
    db_bind_int64(st, 13, emp->created_at);
    db_bind_text(st, 14, emp->tools ? emp->tools : STORE_EMP_TOOLS_DEFAULT);
    return db_exec(st);
}

/* The org row of a new organization and its seed employees in both modes; inside the caller's
 * transaction. */
static int create_in(struct store *s, const struct store_org *org,
                     const struct store_employee *seed, size_t nseed)
{
    struct db_stmt *st = db_prepare(s, "INSERT INTO orgs (id, slug, tier, credits, created_at,"
                                       " updated_at) VALUES ($1, $2, $3, 0, $4, $4)");
    int64_t applied;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org->id);
    db_bind_text(st, 2, org->slug);
    db_bind_text(st, 3, db_tier_name(org->tier));
    db_bind_int64(st, 4, org->created_at);
    rc = db_exec(st);
    if (!rc && org->credits > 0) { /* its first balance: a grant */
        const struct credits_cause why = {STORE_CREDIT_GRANT, NULL, NULL, NULL};
        struct store_tenant live = {{0}, STORE_LIVE};
        snprintf(live.org_id, sizeof(live.org_id), "%s", org->id);
        rc = credits_apply(s, &live, CREDITS_SET, org->credits, &why, &applied);
    }
    for (int mode = 0; !rc && mode < 2; mode++) {
        struct store_tenant t;
        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        t.mode = (enum store_mode)mode;
        for (size_t i = 0; !rc && i < nseed; i++) {
            struct store_employee emp = seed[i];
            char id[ID_MAX];
            rc = id_new("emp", id, sizeof(id));
            if (rc)
                break;
            emp.id = id;
            emp.created_at = org->created_at;
            rc = employees_insert(s, &t, &emp);
        }
    }
    return rc;
}

/* See store_int.h. */
int orgs_create(struct store *s, const char *slug, int tier, int64_t credits,
                const struct store_employee *seed, size_t nseed, struct store_org *out,
                struct err *e)
{
    struct store_org org;
    int rc;

    memset(&org, 0, sizeof(org));
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = orgs_get_by_slug(s, slug, &org);
    if (rc == 0) {
        rc = err_set(e, ERR_CONFLICT, "invalid_request", "org", "the organization exists");
        goto out;
    }
    if (rc != ERR_NOT_FOUND)
        goto out;
    rc = id_new("org", org.id, sizeof(org.id));
    if (rc)
        goto out;
    snprintf(org.slug, sizeof(org.slug), "%s", slug);
    org.tier = tier;
    org.credits = credits;
    org.created_at = clock_now_ms();
    rc = create_in(s, &org, seed, nseed);
    if (rc == ERR_CONFLICT) /* another process made it since the read */
        rc = err_set(e, ERR_CONFLICT, "invalid_request", "org", "the organization exists");
    if (!rc)
        rc = db_commit(s);
out:
    if (rc)
        db_rollback(s);
    else
        *out = org;
    return rc;
}

/* See store_int.h. The tier and the balance change in one transaction; the balance through
 * the ledger (credits_apply). */
int orgs_update(struct store *s, const char *slug, int tier, int64_t credits, struct store_org *out)
{
    struct db_stmt *st;
    struct store_org org;
    int64_t applied;
    bool row;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st =
        db_prepare(s, "UPDATE orgs SET tier = coalesce($2, tier), updated_at = $3 WHERE slug = $1");
    if (!st) {
        rc = ERR_STORE;
        goto out;
    }
    db_bind_text(st, 1, slug);
    db_bind_text(st, 2, tier >= 0 ? db_tier_name(tier) : NULL);
    db_bind_int64(st, 3, clock_now_ms());
    rc = db_step(st, &row);
    if (!rc && db_changes(st) == 0)
        rc = ERR_NOT_FOUND;
    db_done(st);
    if (!rc && credits >= 0) {
        /* a rise is a grant, a fall an adjustment */
        const struct credits_cause why = {STORE_CREDIT_GRANT, NULL, NULL, NULL};
        struct store_tenant live = {{0}, STORE_LIVE};
        rc = orgs_get_by_slug(s, slug, &org);
        snprintf(live.org_id, sizeof(live.org_id), "%s", org.id);
        if (!rc)
            rc = credits_apply(s, &live, CREDITS_SET, credits, &why, &applied);
    }
    if (!rc)
        rc = db_commit(s);
out:
    if (rc) {
        db_rollback(s);
        return rc;
    }
    return orgs_get_by_slug(s, slug, out);
}

/* See store_int.h. */
int employees_set_tier(struct store *s, const char *id, const char *tier)
{
    struct db_stmt *st;

    /* an entry armed without its organization (the command line names the employee only)
     * takes the employee's */
    if (s->audit && !s->audit->tenant.org_id[0]) {
        bool row = false;
        int rc;
        st = db_prepare(s, "SELECT org_id, mode FROM employees WHERE id = $1");
        if (!st)
            return ERR_STORE;
        db_bind_text(st, 1, id);
        rc = db_step(st, &row);
        if (!rc && row) {
            db_copy(st, 0, s->audit->tenant.org_id, sizeof(s->audit->tenant.org_id));
            s->audit->tenant.mode = db_mode(db_text(st, 1));
        }
        db_done(st);
        if (rc)
            return rc;
        if (!row)
            return ERR_NOT_FOUND;
    }
    st = db_prepare(s, "UPDATE employees SET tier = $2, updated_at = $3 WHERE id = $1");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, tier);
    db_bind_int64(st, 3, clock_now_ms());
    return db_exec_one(st);
}

/* ---- API keys ---- */

/* See store_int.h. */
int keys_create(struct store *s, const struct store_key *k)
{
    struct db_stmt *st =
        db_prepare(s, "INSERT INTO api_keys (id, org_id, mode, hash, last4, scopes, created_at,"
                      " expires_at, revoked_at, name, created_by) VALUES ($1, $2, $3, $4, $5, $6,"
                      " $7, $8, NULL, $9, $10)");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, k->id);
    db_bind_text(st, 2, k->org_id);
    db_bind_text(st, 3, db_mode_name(k->mode));
    db_bind_blob(st, 4, k->hash, sizeof(k->hash));
    db_bind_text(st, 5, k->last4);
    db_bind_text(st, 6, k->scopes);
    db_bind_int64(st, 7, k->created_at);
    if (k->expires_at)
        db_bind_int64(st, 8, k->expires_at);
    else
        db_bind_null(st, 8);
    db_bind_text(st, 9, k->name);
    db_bind_text(st, 10, k->created_by[0] ? k->created_by : NULL);
    return db_exec(st);
}

/* The twelve key columns (KEY_COLS) of the current row. */
static void read_key(struct db_stmt *st, struct store_key *out)
{
    size_t len;
    const void *h = db_blob(st, 3, &len);
    memset(out, 0, sizeof(*out));
    db_copy(st, 0, out->id, sizeof(out->id));
    db_copy(st, 1, out->org_id, sizeof(out->org_id));
    out->mode = db_mode(db_text(st, 2));
    if (h && len == sizeof(out->hash))
        memcpy(out->hash, h, sizeof(out->hash));
    db_copy(st, 4, out->last4, sizeof(out->last4));
    db_copy(st, 5, out->scopes, sizeof(out->scopes));
    out->created_at = db_int64(st, 6);
    out->expires_at = db_int64(st, 7);
    out->revoked_at = db_int64(st, 8);
    db_copy(st, 9, out->name, sizeof(out->name));
    db_copy(st, 10, out->created_by, sizeof(out->created_by));
    out->last_used_at = db_int64(st, 11);
}

/* See store_int.h. */
int keys_find(struct store *s, const unsigned char hash[32], struct store_key *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " KEY_COLS " FROM api_keys k WHERE k.hash = $1");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_blob(st, 1, hash, 32);
    rc = db_step(st, &row);
    if (!rc && row)
        read_key(st, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int keys_auth(struct store *s, const unsigned char hash[32], struct store_key *key,
              struct store_org *org)
{
    struct db_stmt *st = db_prepare(s, "SELECT " KEY_COLS
                                       ", " ORGS_COLS("o.") " FROM api_keys k JOIN orgs o ON o.id ="
                                                            " k.org_id WHERE k.hash = $1");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_blob(st, 1, hash, 32);
    rc = db_step(st, &row);
    if (!rc && row) {
        read_key(st, key);
        orgs_cols(st, 12, org);
    }
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int keys_list(struct store *s, const char *org_id, struct arena *a, struct store_key **out,
              size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT " KEY_COLS " FROM api_keys k WHERE k.org_id = $1"
                                       " ORDER BY k.created_at, k.id");
    size_t cap = 16, len = 0;
    struct store_key *v = arena_alloc(a, cap * sizeof(*v));
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    while (!(rc = db_step(st, &row)) && row) {
        if (len == cap) {
            struct store_key *nv = arena_alloc(a, 2 * cap * sizeof(*v));
            memcpy(nv, v, len * sizeof(*v));
            v = nv;
            cap *= 2;
        }
        read_key(st, &v[len++]);
    }
    db_done(st);
    *out = v;
    *n = len;
    return rc;
}

/* See store_int.h. */
int keys_revoke(struct store *s, const char *key_id, int64_t now)
{
    struct db_stmt *st =
        db_prepare(s, "UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, key_id);
    db_bind_int64(st, 2, now);
    return db_exec_one(st);
}

/* See store_int.h. */
int keys_get(struct store *s, const char *org_id, const char *id, struct store_key *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " KEY_COLS " FROM api_keys k WHERE (CAST($1 AS TEXT) IS NULL OR"
                      " k.org_id = $1) AND k.id = $2");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_text(st, 2, id);
    rc = db_step(st, &row);
    if (!rc && row)
        read_key(st, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int keys_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
              unsigned limit, struct arena *a, struct store_key **out, size_t *n, bool *more)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT " KEY_COLS " FROM api_keys k WHERE k.org_id = $1 AND k.revoked_at IS NULL AND"
           " (CAST($3 AS TEXT) IS NULL OR (k.created_at, k.id) < ($2, $3))"
           " ORDER BY k.created_at DESC, k.id DESC LIMIT $4");
    struct store_key *v = arena_alloc(a, ((size_t)limit + 1) * sizeof(*v));
    size_t len = 0;
    bool row = false;
    int rc;

    *n = 0;
    *more = false;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_int64(st, 2, before_t);
    db_bind_text(st, 3, before_id);
    db_bind_int64(st, 4, (int64_t)limit + 1);
    while (!(rc = db_step(st, &row)) && row && len <= limit)
        read_key(st, &v[len++]);
    db_done(st);
    if (len > limit) {
        *more = true;
        len = limit;
    }
    *out = v;
    *n = len;
    return rc;
}

/* See store_int.h. */
int keys_touch(struct store *s, const char *id, int64_t now)
{
    const char *texts[] = {id};
    return db_run(s, "UPDATE api_keys SET last_used_at = $2 WHERE id = $1", texts, 1, &now, 1);
}
