/* SPDX-License-Identifier: MIT */
/*
 * integrations.c: a tenant's connections to providers, the OAuth states of connections under
 * way, how each provider's inbound events reach the tenant (the events URL's token, the
 * organization's own signing secret), the deliveries of inbound events already seen, and the
 * workflows an event starts (contract §13), written once over the driver (driver.h).
 *
 * Sealed values (secrets, PKCE verifiers) are blobs (BYTEA on PostgreSQL). Inserts that may
 * meet a row already there say what then happens (ON CONFLICT), so that nothing fails inside a
 * PostgreSQL transaction. Only the workflows of an event are written twice: the event is read
 * from the trigger's JSON text by json_extract() on SQLite and by ->> on PostgreSQL.
 */
#include "store_int.h"

#include "../core/clock.h"

#include <stdio.h>
#include <string.h>

/* A copy of blob column 'col' in 'a' and its length; NULL (length 0) for null or empty. */
static const unsigned char *arena_blob(struct arena *a, struct db_stmt *st, int col, size_t *len)
{
    size_t n;
    const void *p = db_blob(st, col, &n);
    unsigned char *copy;
    *len = 0;
    if (!p || n == 0)
        return NULL;
    copy = arena_alloc(a, n);
    memcpy(copy, p, n);
    *len = n;
    return copy;
}

/* ---- Connections ---- */

/* See store_int.h. */
int integrations_get(struct store *s, const struct store_tenant *t, const char *provider,
                     struct arena *a, struct store_integration *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT provider, status, secrets, error,"
                                       " coalesce(connected_at, 0), updated_at, account_key FROM"
                                       " integrations WHERE org_id = $1 AND mode = $2 AND"
                                       " provider = $3");
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    rc = db_step(st, &row);
    if (!rc && row) {
        out->provider = db_arena_text(a, st, 0);
        out->status = db_arena_text(a, st, 1);
        out->secrets = arena_blob(a, st, 2, &out->secrets_len);
        out->error = db_arena_text(a, st, 3);
        out->connected_at = db_int64(st, 4);
        out->updated_at = db_int64(st, 5);
        out->account_key = db_arena_text(a, st, 6);
    }
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* The upsert of integrations_put(), inside the caller's transaction. */
static int integration_write(struct store *s, const struct store_tenant *t,
                             const struct store_integration *in)
{
    struct db_stmt *st = db_prepare(
        s, "INSERT INTO integrations (org_id, mode, provider, status, secrets, error,"
           " connected_at, updated_at, account_key) VALUES ($1, $2, $3, $4, $5, $6,"
           " nullif(CAST($7 AS BIGINT), 0), $8, $9) ON CONFLICT (org_id, mode, provider) DO"
           " UPDATE SET status = excluded.status, secrets = excluded.secrets, error ="
           " excluded.error, connected_at = excluded.connected_at, updated_at ="
           " excluded.updated_at, account_key = excluded.account_key");
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, in->provider);
    db_bind_text(st, 4, in->status);
    db_bind_blob(st, 5, in->secrets, in->secrets_len);
    db_bind_text(st, 6, in->error);
    db_bind_int64(st, 7, in->connected_at);
    db_bind_int64(st, 8, in->updated_at);
    db_bind_text(st, 9, in->account_key);
    rc = db_exec(st);
    /* only a status the CHECK refuses can conflict: the caller's error, as ever ERR_STORE */
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* The event of a row that goes from 'before' (NULL: none) to 'after' (NULL: deleted), if the
 * change is one (contract §15): connected, in error, disconnected. */
static int integration_event(struct store *s, const struct store_tenant *t, const char *before,
                             const struct store_integration *after, const char *provider,
                             int64_t now)
{
    struct store_integration gone = {0};
    if (!after) {
        if (!before)
            return 0;
        gone.provider = provider;
        gone.status = "available";
        return hook_record(s, t, "integration.disconnected", STORE_HOOK_INTEGRATION, &gone, now);
    }
    if (before && strcmp(before, after->status) == 0)
        return 0; /* a refresh of the tokens, or the same error again */
    if (strcmp(after->status, "connected") == 0)
        return hook_record(s, t, "integration.connected", STORE_HOOK_INTEGRATION, after, now);
    return hook_record(s, t, "integration.error", STORE_HOOK_INTEGRATION, after, now);
}

/* The status of the tenant's row for 'provider' into 'out' ("" when none); inside the caller's
 * transaction, the row locked on PostgreSQL. */
static int integration_status(struct store *s, const struct store_tenant *t, const char *provider,
                              char *out, size_t n)
{
    struct db_stmt *st =
        db_prepare(s, db_dialect(s) == DB_POSTGRES
                          ? "SELECT status FROM integrations WHERE org_id = $1 AND mode = $2 AND"
                            " provider = $3 FOR UPDATE"
                          : "SELECT status FROM integrations WHERE org_id = $1 AND mode = $2 AND"
                            " provider = $3");
    bool row = false;
    int rc;

    *out = '\0';
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    rc = db_step(st, &row);
    if (!rc && row)
        db_copy(st, 0, out, n);
    db_done(st);
    return rc;
}

/* See store_int.h. Every column but the key is written, so the update of a row already there
 * leaves what an insert in its place would; a change of status records its event. */
int integrations_put(struct store *s, const struct store_tenant *t,
                     const struct store_integration *in)
{
    char before[16];
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = integration_status(s, t, in->provider, before, sizeof(before));
    if (!rc)
        rc = integration_write(s, t, in);
    if (!rc)
        rc = integration_event(s, t, *before ? before : NULL, in, in->provider, in->updated_at);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int integrations_delete(struct store *s, const struct store_tenant *t, const char *provider)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), provider};
    char before[16];
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = integration_status(s, t, provider, before, sizeof(before));
    if (!rc)
        rc = db_run(s, "DELETE FROM integrations WHERE org_id = $1 AND mode = $2 AND provider = $3",
                    texts, 3, NULL, 0);
    if (!rc)
        rc = integration_event(s, t, *before ? before : NULL, NULL, provider, clock_now_ms());
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. Connected rows only: a connection in error receives nothing. */
int integrations_tenants(struct store *s, const char *provider, const char *account_key,
                         struct store_tenant *out, size_t max, size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT org_id, mode FROM integrations WHERE provider = $1"
                                       " AND account_key = $2 AND status = 'connected' ORDER BY"
                                       " connected_at, org_id, mode LIMIT $3");
    bool row = false;
    int rc;

    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, provider);
    db_bind_text(st, 2, account_key);
    db_bind_int64(st, 3, (int64_t)max);
    while (!(rc = db_step(st, &row)) && row && *n < max) {
        db_copy(st, 0, out[*n].org_id, sizeof(out[*n].org_id));
        out[*n].mode = db_mode(db_text(st, 1));
        (*n)++;
    }
    db_done(st);
    return rc;
}

/* ---- OAuth states ---- */

/* See store_int.h. */
int oauth_states_create(struct store *s, const struct store_oauth_state *in)
{
    struct db_stmt *st = db_prepare(s, "INSERT INTO oauth_states (state_hash, org_id, mode,"
                                       " provider, verifier, redirect_uri, scopes, created_at,"
                                       " expires_at, binding_hash) VALUES ($1, $2, $3, $4, $5, $6,"
                                       " $7, $8, $9, $10)");
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, in->state_hash);
    db_bind_text(st, 2, in->tenant.org_id);
    db_bind_text(st, 3, db_mode_name(in->tenant.mode));
    db_bind_text(st, 4, in->provider);
    db_bind_blob(st, 5, in->verifier, in->verifier_len);
    db_bind_text(st, 6, in->redirect_uri);
    db_bind_text(st, 7, in->scopes);
    db_bind_int64(st, 8, in->created_at);
    db_bind_int64(st, 9, in->expires_at);
    db_bind_text(st, 10, in->binding_hash[0] ? in->binding_hash : NULL);
    rc = db_exec(st);
    if (rc)
        return rc == ERR_CONFLICT ? ERR_STORE : rc;
    /* States a day past their end are of no use to anyone. */
    {
        const int64_t ints[] = {in->created_at - 24LL * 3600 * 1000};
        return db_run(s, "DELETE FROM oauth_states WHERE expires_at < $1", NULL, 0, ints, 1);
    }
}

/* The columns of a state that its readers read (STATE_COLS), from 'st' into 'out'. */
#define STATE_COLS                                                                                 \
    "org_id, mode, verifier, redirect_uri, scopes, created_at, expires_at, binding_hash,"          \
    " coalesce(opened_at, 0)"
static void state_read(struct db_stmt *st, const char *state_hash, const char *provider,
                       struct arena *a, struct store_oauth_state *out)
{
    snprintf(out->state_hash, sizeof(out->state_hash), "%s", state_hash);
    db_copy(st, 0, out->tenant.org_id, sizeof(out->tenant.org_id));
    out->tenant.mode = db_mode(db_text(st, 1));
    out->provider = arena_strdup(a, provider);
    out->verifier = arena_blob(a, st, 2, &out->verifier_len);
    out->redirect_uri = db_arena_text(a, st, 3);
    out->scopes = db_arena_text(a, st, 4);
    out->created_at = db_int64(st, 5);
    out->expires_at = db_int64(st, 6);
    db_copy(st, 7, out->binding_hash, sizeof(out->binding_hash));
    out->opened_at = db_int64(st, 8);
}

/* Run 'sql' ($1 the state's hash, $2 the provider, $3 'now'; it returns STATE_COLS) for at most
 * one state into '*out'; ERR_NOT_FOUND when there is none. */
static int state_one(struct store *s, const char *sql, const char *state_hash, const char *provider,
                     int64_t now, struct arena *a, struct store_oauth_state *out)
{
    struct db_stmt *st = db_prepare(s, sql);
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, state_hash);
    db_bind_text(st, 2, provider);
    db_bind_int64(st, 3, now);
    rc = db_step(st, &row);
    if (!rc && row) {
        state_read(st, state_hash, provider, a, out);
        rc = db_step(st, &row); /* run the statement to its end */
    }
    db_done(st);
    if (rc)
        return rc == ERR_CONFLICT ? ERR_STORE : rc;
    return out->provider ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. One statement marks the state used and returns it: two callbacks with the
 * same state cannot both have it. */
int oauth_states_take(struct store *s, const char *state_hash, const char *provider, int64_t now,
                      struct arena *a, struct store_oauth_state *out)
{
    return state_one(s,
                     "UPDATE oauth_states SET used_at = $3 WHERE state_hash = $1 AND provider ="
                     " $2 AND used_at IS NULL AND expires_at > $3 RETURNING " STATE_COLS,
                     state_hash, provider, now, a, out);
}

/* See store_int.h. */
int oauth_states_peek(struct store *s, const char *state_hash, const char *provider, int64_t now,
                      struct arena *a, struct store_oauth_state *out)
{
    return state_one(s,
                     "SELECT " STATE_COLS " FROM oauth_states WHERE state_hash = $1 AND provider"
                     " = $2 AND used_at IS NULL AND expires_at > $3",
                     state_hash, provider, now, a, out);
}

/* See store_int.h. One statement: of two browsers that open a state not yet opened, one binds
 * it. */
int oauth_states_start(struct store *s, const char *state_hash, const char *provider, int64_t now,
                       const char *binding_hash)
{
    struct db_stmt *st = db_prepare(
        s, "UPDATE oauth_states SET opened_at = coalesce(opened_at, $3), binding_hash ="
           " coalesce(CAST($4 AS TEXT), binding_hash) WHERE state_hash = $1 AND provider = $2 AND"
           " used_at IS NULL AND expires_at > $3 AND (CAST($4 AS TEXT) IS NULL OR opened_at IS"
           " NULL)");
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, state_hash);
    db_bind_text(st, 2, provider);
    db_bind_int64(st, 3, now);
    db_bind_text(st, 4, binding_hash);
    rc = db_exec_one(st);
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* See store_int.h. */
int oauth_states_open(struct store *s, const struct store_tenant *t, const char *provider,
                      int64_t now, bool *open)
{
    struct db_stmt *st = db_prepare(s, "SELECT 1 FROM oauth_states WHERE org_id = $1 AND mode ="
                                       " $2 AND provider = $3 AND used_at IS NULL AND expires_at"
                                       " > $4 LIMIT 1");
    bool row = false;
    int rc;

    *open = false;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    db_bind_int64(st, 4, now);
    rc = db_step(st, &row);
    *open = !rc && row;
    db_done(st);
    return rc;
}

/* ---- Inbound events ---- */

/* The tenant's row for 'provider' into '*out'; '*found' whether there is one. */
static int inbound_read(struct store *s, const struct store_tenant *t, const char *provider,
                        struct arena *a, struct store_inbound *out, bool *found)
{
    struct db_stmt *st = db_prepare(s, "SELECT token, secret FROM integration_inbound WHERE"
                                       " org_id = $1 AND mode = $2 AND provider = $3");
    int rc;

    memset(out, 0, sizeof(*out));
    *found = false;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    rc = db_step(st, found);
    if (!rc && *found) {
        out->token = db_arena_text(a, st, 0);
        out->secret = arena_blob(a, st, 1, &out->secret_len);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. Read first: the row is written only the first time (a list of the
 * integrations, an event's check, take no write lock once it exists). */
int inbound_get(struct store *s, const struct store_tenant *t, const char *provider,
                const char *fresh, struct arena *a, struct store_inbound *out)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), provider, fresh};
    bool found = false;
    int rc = inbound_read(s, t, provider, a, out, &found);

    if (rc || found)
        return rc;
    if (!fresh)
        return ERR_NOT_FOUND;
    rc = db_run(s,
                "INSERT INTO integration_inbound (org_id, mode, provider, token) VALUES ($1, $2,"
                " $3, $4) ON CONFLICT (org_id, mode, provider) DO NOTHING",
                texts, 4, NULL, 0);
    if (rc)
        return rc == ERR_CONFLICT ? ERR_STORE : rc;
    rc = inbound_read(s, t, provider, a, out, &found);
    /* the row was just written: none is a failure */
    return rc ? rc : found ? 0 : ERR_STORE;
}

/* See store_int.h. One statement: from its commit the old token names no one. */
int inbound_rotate(struct store *s, const struct store_tenant *t, const char *provider,
                   const char *fresh)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), provider, fresh};
    int rc = db_run(s,
                    "INSERT INTO integration_inbound (org_id, mode, provider, token) VALUES ($1,"
                    " $2, $3, $4) ON CONFLICT (org_id, mode, provider) DO UPDATE SET token ="
                    " excluded.token",
                    texts, 4, NULL, 0);
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* See store_int.h. */
int inbound_secret(struct store *s, const struct store_tenant *t, const char *provider,
                   const char *fresh, const unsigned char *secret, size_t len)
{
    struct db_stmt *st = db_prepare(s, "INSERT INTO integration_inbound (org_id, mode, provider,"
                                       " token, secret) VALUES ($1, $2, $3, $4, $5) ON CONFLICT"
                                       " (org_id, mode, provider) DO UPDATE SET secret ="
                                       " excluded.secret");
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    db_bind_text(st, 4, fresh);
    if (secret)
        db_bind_blob(st, 5, secret, len);
    else
        db_bind_null(st, 5);
    rc = db_exec(st);
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* See store_int.h. */
int events_tenant(struct store *s, const char *provider, const char *token,
                  struct store_tenant *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT org_id, mode FROM integration_inbound WHERE"
                                       " provider = $1 AND token = $2");
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, provider);
    db_bind_text(st, 2, token);
    rc = db_step(st, &row);
    if (!rc && row) {
        db_copy(st, 0, out->org_id, sizeof(out->org_id));
        out->mode = db_mode(db_text(st, 1));
    }
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. A delivery noted before 'now' - 'window_ms' counts as new again: its row
 * takes the new time in the same statement, so two deliveries at once cannot both be first. */
int deliveries_note(struct store *s, const struct store_tenant *t, const char *provider,
                    const char *id, int64_t now, int64_t window_ms, bool *first)
{
    struct db_stmt *st = db_prepare(
        s, "INSERT INTO integration_deliveries (org_id, mode, provider, delivery_id, received_at)"
           " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (org_id, mode, provider, delivery_id) DO"
           " UPDATE SET received_at = excluded.received_at WHERE"
           " integration_deliveries.received_at < $6");
    bool row;
    int rc;

    *first = false;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    db_bind_text(st, 4, id);
    db_bind_int64(st, 5, now);
    db_bind_int64(st, 6, now - window_ms);
    rc = db_step(st, &row);
    *first = !rc && db_changes(st) == 1;
    db_done(st);
    if (!rc && *first) {
        const int64_t old[] = {now - STORE_DELIVERY_KEEP_MS};
        rc =
            db_run(s, "DELETE FROM integration_deliveries WHERE received_at < $1", NULL, 0, old, 1);
    }
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* ---- Workflows started by an event ---- */

/* See store_int.h. */
int workflows_for_event(struct store *s, const struct store_tenant *t, const char *event,
                        struct arena *a, struct store_workflow **out, size_t *n)
{
    struct db_stmt *st;
    bool row = false;
    int rc;

    *n = 0;
    *out = arena_alloc(a, STORE_EVENT_WORKFLOWS_MAX * sizeof(**out));
    if (db_dialect(s) == DB_POSTGRES)
        st = db_prepare(s, "SELECT " WF_COLS " FROM workflows WHERE org_id = $1 AND mode = $2 AND"
                           " trigger_type = 'integration' AND enabled AND"
                           " CAST(trigger AS jsonb) ->> 'event' = $3 ORDER BY created_at, id"
                           " LIMIT $4");
    else
        st = db_prepare(s, "SELECT " WF_COLS " FROM workflows WHERE org_id = $1 AND mode = $2 AND"
                           " trigger_type = 'integration' AND enabled AND"
                           " json_extract(trigger, '$.event') = $3 ORDER BY created_at, id"
                           " LIMIT $4");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, event);
    db_bind_int64(st, 4, STORE_EVENT_WORKFLOWS_MAX);
    while (!(rc = db_step(st, &row)) && row && *n < STORE_EVENT_WORKFLOWS_MAX)
        workflows_read(st, a, &(*out)[(*n)++]);
    db_done(st);
    return rc;
}
