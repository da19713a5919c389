/* SPDX-License-Identifier: MIT */
/*
 * integrations.c: a tenant's connections to providers, the OAuth states of connections under
 * way, the inbound events token, the deliveries of inbound events already seen, and the
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
                                       " coalesce(connected_at, 0), updated_at FROM integrations"
                                       " WHERE org_id = $1 AND mode = $2 AND provider = $3");
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
           " connected_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6,"
           " nullif(CAST($7 AS BIGINT), 0), $8) ON CONFLICT (org_id, mode, provider) DO UPDATE"
           " SET status = excluded.status, secrets = excluded.secrets, error = excluded.error,"
           " connected_at = excluded.connected_at, updated_at = excluded.updated_at");
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

/* ---- OAuth states ---- */

/* See store_int.h. */
int oauth_states_create(struct store *s, const struct store_oauth_state *in)
{
    struct db_stmt *st = db_prepare(s, "INSERT INTO oauth_states (state_hash, org_id, mode,"
                                       " provider, verifier, redirect_uri, scopes, created_at,"
                                       " expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)");
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
    rc = db_exec(st);
    if (rc)
        return rc == ERR_CONFLICT ? ERR_STORE : rc;
    /* States a day past their end are of no use to anyone. */
    {
        const int64_t ints[] = {in->created_at - 24LL * 3600 * 1000};
        return db_run(s, "DELETE FROM oauth_states WHERE expires_at < $1", NULL, 0, ints, 1);
    }
}

/* See store_int.h. One statement marks the state used and returns it: two callbacks with the
 * same state cannot both have it. */
int oauth_states_take(struct store *s, const char *state_hash, const char *provider, int64_t now,
                      struct arena *a, struct store_oauth_state *out)
{
    struct db_stmt *st = db_prepare(s, "UPDATE oauth_states SET used_at = $3 WHERE state_hash ="
                                       " $1 AND provider = $2 AND used_at IS NULL AND expires_at >"
                                       " $3 RETURNING org_id, mode, verifier, redirect_uri,"
                                       " scopes, created_at, expires_at");
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
        snprintf(out->state_hash, sizeof(out->state_hash), "%s", state_hash);
        db_copy(st, 0, out->tenant.org_id, sizeof(out->tenant.org_id));
        out->tenant.mode = db_mode(db_text(st, 1));
        out->provider = arena_strdup(a, provider);
        out->verifier = arena_blob(a, st, 2, &out->verifier_len);
        out->redirect_uri = db_arena_text(a, st, 3);
        out->scopes = db_arena_text(a, st, 4);
        out->created_at = db_int64(st, 5);
        out->expires_at = db_int64(st, 6);
        rc = db_step(st, &row); /* run the statement to its end */
    }
    db_done(st);
    if (rc)
        return rc == ERR_CONFLICT ? ERR_STORE : rc;
    return out->provider ? 0 : ERR_NOT_FOUND;
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

/* See store_int.h. */
int events_token(struct store *s, const struct store_tenant *t, const char *fresh, struct arena *a,
                 const char **token)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), fresh};
    struct db_stmt *st;
    bool row = false;
    int rc = db_run(s,
                    "INSERT INTO integration_event_tokens (org_id, mode, token) VALUES ($1, $2, $3)"
                    " ON CONFLICT (org_id, mode) DO NOTHING",
                    texts, 3, NULL, 0);
    *token = NULL;
    if (rc)
        return rc;
    st = db_prepare(s, "SELECT token FROM integration_event_tokens WHERE org_id = $1 AND"
                       " mode = $2");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    rc = db_step(st, &row);
    if (!rc && row)
        *token = db_arena_text(a, st, 0);
    db_done(st);
    /* the row was just written: none is a failure */
    return rc ? rc : row ? 0 : ERR_STORE;
}

/* See store_int.h. */
int events_tenant(struct store *s, const char *token, struct store_tenant *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT org_id, mode FROM integration_event_tokens WHERE token = $1");
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, token);
    rc = db_step(st, &row);
    if (!rc && row) {
        db_copy(st, 0, out->org_id, sizeof(out->org_id));
        out->mode = db_mode(db_text(st, 1));
    }
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int deliveries_note(struct store *s, const struct store_tenant *t, const char *provider,
                    const char *id, int64_t now, bool *first)
{
    struct db_stmt *st = db_prepare(s, "INSERT INTO integration_deliveries (org_id, mode,"
                                       " provider, delivery_id, received_at) VALUES ($1, $2, $3,"
                                       " $4, $5) ON CONFLICT DO NOTHING");
    bool row;
    int rc;

    *first = false;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, provider);
    db_bind_text(st, 4, id);
    db_bind_int64(st, 5, now);
    rc = db_step(st, &row);
    *first = !rc && db_changes(st) == 1;
    db_done(st);
    if (!rc && *first) {
        const int64_t old[] = {now - 7LL * 86400 * 1000};
        rc =
            db_run(s, "DELETE FROM integration_deliveries WHERE received_at < $1", NULL, 0, old, 1);
    }
    return rc;
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
