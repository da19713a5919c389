/* SPDX-License-Identifier: MIT */
/*
 * nodes.c: the server processes that share a database, and taking back the work of one that
 * died, written once over the driver (driver.h).
 *
 * DESIGN: a node registers at start (nodes_start) and beats every third of its lease
 * (nodes_beat). The work it holds names it (employee_work, idempotency_keys.node_id, ...). A
 * node is alive while its heartbeat is younger than the lease, or is the caller; the work of
 * any other node is taken back by nodes_recover(), on whichever node runs it first: each
 * statement changes only rows still held by a dead node, so two nodes recovering at once (on
 * PostgreSQL, where row locks make the second see the first's change) take each piece back
 * once. On SQLite one server holds the database at a time, so at start every earlier node is
 * dead; later, as on PostgreSQL, only nodes silent for longer than the lease are. A node that
 * stops cleanly leaves (nodes_stop): what it left unfinished is taken back at once.
 */
#include "store_int.h"

#include <string.h>

/* The nodes that count as alive: the caller ($1) and those that beat since $2. */
#define LIVE "(SELECT id FROM nodes WHERE id = $1 OR heartbeat_at >= $2)"

/* See store_int.h. */
int nodes_start(struct store *s, int64_t now)
{
    const char *texts[] = {store_node_id()};
    const int64_t ints[] = {now};
    return db_run(s,
                  "INSERT INTO nodes (id, started_at, heartbeat_at) VALUES ($1, $2, $2)"
                  " ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                  texts, 1, ints, 1);
}

/* See store_int.h. */
int nodes_beat(struct store *s, int64_t now)
{
    struct db_stmt *st = db_prepare(s, "UPDATE nodes SET heartbeat_at = $2 WHERE id = $1");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, store_node_id());
    db_bind_int64(st, 2, now);
    return db_exec_one(st);
}

/* See store_int.h. */
int nodes_stop(struct store *s)
{
    const char *texts[] = {store_node_id()};
    return db_run(s, "DELETE FROM nodes WHERE id = $1", texts, 1, NULL, 0);
}

/* Run 'sql' (with $1 this node, $2 the oldest live heartbeat) and add the rows it changed. */
static int take_back(struct store *s, const char *sql, int64_t dead_before, size_t *count)
{
    struct db_stmt *st = db_prepare(s, sql);
    bool row;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, store_node_id());
    db_bind_int64(st, 2, dead_before);
    rc = db_step(st, &row);
    if (!rc && count)
        *count += (size_t)db_changes(st);
    db_done(st);
    return rc;
}

/* See store_int.h. */
int nodes_recover(struct store *s, int64_t now, int64_t dead_before, struct store_recovery *out)
{
    int rc;
    memset(out, 0, sizeof(*out));
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = take_back(s, "DELETE FROM employee_work WHERE node_id NOT IN " LIVE, dead_before,
                   &out->busy);
    if (!rc)
        rc = take_back(s,
                       "DELETE FROM idempotency_keys WHERE state = 0 AND (node_id IS NULL OR"
                       " node_id NOT IN " LIVE ")",
                       dead_before, &out->requests);
    if (!rc)
        rc = tasks_take_back(s, store_node_id(), now, dead_before, &out->runs, &out->steps);
    if (!rc)
        rc = take_back(s,
                       "UPDATE documents SET node_id = NULL WHERE status = 'processing' AND"
                       " node_id IS NOT NULL AND node_id NOT IN " LIVE,
                       dead_before, &out->documents);
    if (!rc) /* chat turns they ran: another node goes on from their journal */
        rc = take_back(s,
                       "UPDATE messages SET lease_node = NULL WHERE status = 'in_progress' AND"
                       " lease_node IS NOT NULL AND lease_node NOT IN " LIVE,
                       dead_before, &out->turns);
    if (!rc)
        rc = take_back(s, "DELETE FROM nodes WHERE id <> $1 AND heartbeat_at < $2", dead_before,
                       &out->nodes);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h: one call of the database's rate_enter() (sql_pg/012_shared_limits.sql). */
int nodes_rate_enter(struct store *s, const struct store_rate_ask *ask, struct store_rate *out)
{
    struct db_stmt *st;
    bool row = false;
    int rc;

    if (db_dialect(s) != DB_POSTGRES)
        return ERR_STORE; /* one SQLite server keeps its limits in memory */
    st = db_prepare(s, "SELECT verdict, remaining, reset_s, retry_after"
                       " FROM rate_enter($1, $2, $3, $4, $5, $6, $7, $8)");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, ask->tenant);
    db_bind_text(st, 2, store_node_id());
    db_bind_int64(st, 3, ask->epoch);
    db_bind_int64(st, 4, ask->per_minute);
    db_bind_int64(st, 5, ask->burst);
    db_bind_int64(st, 6, ask->concurrent);
    db_bind_int64(st, 7, ask->now_ms);
    db_bind_int64(st, 8, ask->lease_ms);
    rc = db_step(st, &row);
    if (!rc && !row)
        rc = ERR_STORE;
    if (!rc) {
        out->verdict = (int)db_int64(st, 0);
        out->remaining = db_int64(st, 1);
        out->reset_s = db_int64(st, 2);
        out->retry_after = db_int64(st, 3);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int nodes_rate_leave(struct store *s, const char *tenant, int64_t epoch)
{
    const char *texts[] = {tenant, store_node_id()};
    const int64_t ints[] = {epoch};
    if (db_dialect(s) != DB_POSTGRES)
        return ERR_STORE;
    return db_run(s, "SELECT rate_leave($1, $2, $3)", texts, 2, ints, 1);
}
