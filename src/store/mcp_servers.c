/* SPDX-License-Identifier: MIT */
/*
 * mcp_servers.c: the MCP servers of a tenant (store.h), over the driver, written once for
 * SQLite and PostgreSQL. The header values arrive sealed and leave sealed: this file never sees
 * them in clear. A tenant's server names are unique (the table's constraint, so two creations
 * at once cannot both win), and its count is bounded in the creation's write transaction.
 *
 * An update writes only the members it names. A change of url or headers bumps the
 * generation; a refresh (the tool list read again, nothing else changed) is written only while
 * the generation is the one it began with, so a read of an old URL that ends after a PATCH
 * cannot overwrite what the PATCH stored.
 */
#include "store_int.h"

#include <string.h>

#define COLS                                                                                       \
    "id, name, url, header_names, headers, enabled, status, error, tools, generation,"             \
    " coalesce(refreshed_at, 0), created_at, updated_at"

static void read_server(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_mcp_server *m = pout;
    const void *p;
    size_t len = 0;

    memset(m, 0, sizeof(*m));
    m->id = db_arena_text(a, st, 0);
    m->name = db_arena_text(a, st, 1);
    m->url = db_arena_text(a, st, 2);
    m->header_names = db_arena_text(a, st, 3);
    p = db_blob(st, 4, &len);
    if (p && len) {
        unsigned char *c = arena_alloc(a, len);
        memcpy(c, p, len);
        m->headers = c;
        m->headers_len = len;
    }
    m->enabled = db_int64(st, 5) != 0;
    m->status = db_arena_text(a, st, 6);
    m->error = db_arena_text(a, st, 7);
    m->tools = db_arena_text(a, st, 8);
    m->generation = db_int64(st, 9);
    m->refreshed_at = db_int64(st, 10);
    m->created_at = db_int64(st, 11);
    m->updated_at = db_int64(st, 12);
}

/* The rows of 'st' (asked for one more than 'limit') into '*items' from 'a'; ends 'st'. */
static int rows(struct db_stmt *st, size_t limit, struct arena *a, struct store_mcp_server **items,
                size_t *n, bool *has_more)
{
    struct store_mcp_server *base = arena_alloc(a, (limit + 1) * sizeof(*base));
    bool row = false;
    int rc;

    *n = 0;
    *has_more = false;
    while (!(rc = db_step(st, &row)) && row) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        read_server(st, a, &base[(*n)++]);
    }
    db_done(st);
    *items = base;
    return rc;
}

/* See store_int.h. */
int mcp_server_create(struct store *s, const struct store_tenant *t,
                      const struct store_mcp_server *in)
{
    struct db_stmt *st;
    int64_t count = 0;
    bool row = false;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st = db_prepare(s, "SELECT count(*) FROM mcp_servers WHERE org_id = $1 AND mode = $2");
    if (st)
        db_bind_tenant(st, t);
    rc = st ? db_step(st, &row) : ERR_STORE;
    if (st) {
        count = row ? db_int64(st, 0) : 0;
        db_done(st);
    }
    if (!rc && count >= STORE_MCP_SERVERS_MAX)
        rc = ERR_LIMIT;
    if (!rc) {
        st = db_prepare(s, "INSERT INTO mcp_servers (id, org_id, mode, name, url, header_names,"
                           " headers, enabled, status, error, tools, generation, refreshed_at,"
                           " created_at, updated_at) VALUES ($3, $1, $2, $4, $5, $6, $7, $8,"
                           " $9, $10, $11, 0, nullif(CAST($12 AS BIGINT), 0), $13, $13)");
        if (!st)
            rc = ERR_STORE;
    }
    if (!rc) {
        db_bind_tenant(st, t);
        db_bind_text(st, 3, in->id);
        db_bind_text(st, 4, in->name);
        db_bind_text(st, 5, in->url);
        db_bind_text(st, 6, in->header_names ? in->header_names : "[]");
        db_bind_blob(st, 7, in->headers, in->headers_len);
        db_bind_int64(st, 8, in->enabled ? 1 : 0);
        db_bind_text(st, 9, in->status);
        db_bind_text(st, 10, in->error);
        db_bind_text(st, 11, in->tools ? in->tools : "[]");
        db_bind_int64(st, 12, in->refreshed_at);
        db_bind_int64(st, 13, in->created_at);
        rc = db_exec(st);
    }
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int mcp_server_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                   struct store_mcp_server *out)
{
    const char *texts[] = {id};
    return db_one(s, "SELECT " COLS " FROM mcp_servers WHERE org_id = $1 AND mode = $2 AND id = $3",
                  t, texts, 1, read_server, a, out);
}

/* See store_int.h. */
int mcp_server_find(struct store *s, const struct store_tenant *t, const char *name,
                    struct arena *a, struct store_mcp_server *out)
{
    const char *texts[] = {name};
    return db_one(s,
                  "SELECT " COLS " FROM mcp_servers WHERE org_id = $1 AND mode = $2 AND"
                  " name = $3",
                  t, texts, 1, read_server, a, out);
}

/* See store_int.h. */
int mcp_servers_list(struct store *s, const struct store_tenant *t, unsigned limit,
                     int64_t before_created, const char *before_id, struct arena *a,
                     struct store_mcp_server_page *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " COLS " FROM mcp_servers WHERE org_id = $1 AND mode = $2 AND"
                      " (CAST($4 AS TEXT) IS NULL OR (created_at, id) < ($3, $4))"
                      " ORDER BY created_at DESC, id DESC LIMIT $5");
    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, before_created);
    db_bind_text(st, 4, before_id);
    db_bind_int64(st, 5, (int64_t)limit + 1);
    return rows(st, limit, a, &out->items, &out->n, &out->has_more);
}

/* See store_int.h. */
int mcp_servers_enabled(struct store *s, const struct store_tenant *t, struct arena *a,
                        struct store_mcp_server **out, size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT " COLS " FROM mcp_servers WHERE org_id = $1 AND"
                                       " mode = $2 AND enabled = 1 ORDER BY created_at, id"
                                       " LIMIT $3");
    bool more;
    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, STORE_MCP_SERVERS_MAX);
    return rows(st, STORE_MCP_SERVERS_MAX, a, out, n, &more);
}

/* See store_int.h. */
int mcp_server_update(struct store *s, const struct store_tenant *t,
                      const struct store_mcp_server *in, unsigned fields)
{
    /* each member is written when its flag ($4, $6, $10, $11 = 1) says so; a refresh ($10 = 1,
     * $11 = 0) only while the generation is $18 */
    struct db_stmt *st = db_prepare(
        s, "UPDATE mcp_servers SET"
           " name = CASE WHEN CAST($4 AS BIGINT) = 1 THEN $5 ELSE name END,"
           " enabled = CASE WHEN CAST($6 AS BIGINT) = 1 THEN CAST($7 AS BIGINT) ELSE enabled END,"
           " url = CASE WHEN CAST($11 AS BIGINT) = 1 THEN $8 ELSE url END,"
           " header_names = CASE WHEN CAST($11 AS BIGINT) = 1 THEN $9 ELSE header_names END,"
           " headers = CASE WHEN CAST($11 AS BIGINT) = 1 THEN $12 ELSE headers END,"
           " generation = CASE WHEN CAST($11 AS BIGINT) = 1 THEN generation + 1 ELSE"
           " generation END,"
           " status = CASE WHEN CAST($10 AS BIGINT) = 1 THEN $13 ELSE status END,"
           " error = CASE WHEN CAST($10 AS BIGINT) = 1 THEN $14 ELSE error END,"
           " tools = CASE WHEN CAST($10 AS BIGINT) = 1 THEN $15 ELSE tools END,"
           " refreshed_at = CASE WHEN CAST($10 AS BIGINT) = 1 THEN nullif(CAST($16 AS BIGINT), 0)"
           " ELSE refreshed_at END,"
           " updated_at = $17"
           " WHERE org_id = $1 AND mode = $2 AND id = $3 AND (CAST($10 AS BIGINT) = 0 OR"
           " CAST($11 AS BIGINT) = 1 OR generation = $18)");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, in->id);
    db_bind_int64(st, 4, (fields & STORE_MCP_NAME) ? 1 : 0);
    db_bind_text(st, 5, in->name);
    db_bind_int64(st, 6, (fields & STORE_MCP_ENABLED) ? 1 : 0);
    db_bind_int64(st, 7, in->enabled ? 1 : 0);
    db_bind_text(st, 8, in->url);
    db_bind_text(st, 9, in->header_names ? in->header_names : "[]");
    db_bind_int64(st, 10, (fields & STORE_MCP_TOOLS) ? 1 : 0);
    db_bind_int64(st, 11, (fields & STORE_MCP_TARGET) ? 1 : 0);
    db_bind_blob(st, 12, in->headers, in->headers_len);
    db_bind_text(st, 13, in->status ? in->status : "error");
    db_bind_text(st, 14, in->error);
    db_bind_text(st, 15, in->tools ? in->tools : "[]");
    db_bind_int64(st, 16, in->refreshed_at);
    db_bind_int64(st, 17, in->updated_at);
    db_bind_int64(st, 18, in->generation);
    return db_exec_one(st);
}

/* See store_int.h. */
int mcp_server_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    struct db_stmt *st =
        db_prepare(s, "DELETE FROM mcp_servers WHERE org_id = $1 AND mode = $2 AND id = $3");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    return db_exec_one(st);
}
