/* SPDX-License-Identifier: MIT */
/*
 * driver.h: the narrow interface a database implements so that the store's operations are
 * written once (store/orgs.c, ...) and run on SQLite (sqlite.c) and PostgreSQL (postgres.c).
 *
 * DESIGN: a statement is prepared once per connection and kept by its SQL text. The text uses
 * PostgreSQL's parameters ($1 .. $n, numbered, a number may repeat); the SQLite driver reads
 * them as ?1 .. ?n. SQL that the two databases read alike (RETURNING, ON CONFLICT, CASE,
 * coalesce, ||) is written once; what differs (full-text search, the queue claim, upkeep) stays
 * in the driver's file. Values cross as int64, double, text and blob; a PostgreSQL boolean reads
 * as 1 or 0. Private to store/: nothing outside it includes this header.
 */
#ifndef WORKFORCE_STORE_DRIVER_H
#define WORKFORCE_STORE_DRIVER_H

#include "store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A prepared statement of one connection. Each driver's own struct starts with this one. */
struct db_stmt {
    const struct db_driver *drv;
    struct store *s; /* set by db_prepare() */
    bool writes;     /* an INSERT, UPDATE or DELETE (db_prepare()) */
};

enum db_tx {
    DB_TX_READ,  /* a consistent snapshot for several reads */
    DB_TX_WRITE, /* holds the right to write from its start (SQLite: BEGIN IMMEDIATE) */
};

/* Which SQL a statement must be written in where the two databases differ (full-text search,
 * the queue claim, upkeep): db_dialect(s). */
enum db_dialect {
    DB_SQLITE,
    DB_POSTGRES,
};

struct db_driver {
    const char *name; /* "sqlite", "postgres" */
    enum db_dialect dialect;
    /*
     * The statement of 'sql' on the connection of 's', with no bindings; NULL on failure
     * (logged). It stays the connection's; give it back with done() before the same text is
     * prepared again.
     */
    struct db_stmt *(*prepare)(struct store *s, const char *sql);
    /* Parameter 'i' (1-based). Text and blob values are copied or must live until done(). A
     * NULL text or blob binds SQL null. 'len' of a text may be (size_t)-1: up to its NUL. */
    void (*bind_null)(struct db_stmt *st, int i);
    void (*bind_int64)(struct db_stmt *st, int i, int64_t v);
    void (*bind_double)(struct db_stmt *st, int i, double v);
    void (*bind_text)(struct db_stmt *st, int i, const char *v, size_t len);
    void (*bind_blob)(struct db_stmt *st, int i, const void *v, size_t len);
    /*
     * Run the statement (first call) or move to its next row: 0 with '*row' telling whether a
     * row is there, ERR_CONFLICT when a unique, primary-key or check constraint refused the
     * change, ERR_STORE on any other failure (logged).
     */
    int (*step)(struct db_stmt *st, bool *row);
    /* Columns of the current row, 0-based. A null reads as 0, 0.0 or NULL. Text and blob
     * pointers stay valid until the next step() or done(); a text is NUL-terminated. */
    bool (*is_null)(struct db_stmt *st, int col);
    int64_t (*col_int64)(struct db_stmt *st, int col);
    double (*col_double)(struct db_stmt *st, int col);
    const char *(*col_text)(struct db_stmt *st, int col, size_t *len);
    const void *(*col_blob)(struct db_stmt *st, int col, size_t *len);
    /* Rows inserted, updated or deleted by the statement's run (after step()). */
    int64_t (*changes)(struct db_stmt *st);
    /* Reset: the statement is the connection's again, its bindings and rows dropped. */
    void (*done)(struct db_stmt *st);
    /* Transactions on the connection of 's': 0 or ERR_STORE (logged). */
    int (*begin)(struct store *s, enum db_tx kind);
    int (*commit)(struct store *s);
    int (*rollback)(struct store *s);
};

/* ---- For the operations (db.c): the driver of the statement or store, and what every
 * operation repeats. ---- */

/* drv->prepare of the store's driver (see above). */
struct db_stmt *db_prepare(struct store *s, const char *sql);
/* A text parameter up to its NUL; NULL binds null. */
void db_bind_text(struct db_stmt *st, int i, const char *v);
void db_bind_int64(struct db_stmt *st, int i, int64_t v);
void db_bind_blob(struct db_stmt *st, int i, const void *v, size_t len);
void db_bind_null(struct db_stmt *st, int i);
/* Bind the tenant (org id, mode name) as parameters 1 and 2. */
void db_bind_tenant(struct db_stmt *st, const struct store_tenant *t);
int db_step(struct db_stmt *st, bool *row);
int64_t db_int64(struct db_stmt *st, int col);
/* Text of a column, NULL for null; valid until the next step or done. */
const char *db_text(struct db_stmt *st, int col);
/* Column 'col' copied into 'dst' of 'n' bytes (truncated; "" for null). */
void db_copy(struct db_stmt *st, int col, char *dst, size_t n);
/* Column 'col' copied into 'a' (NULL for null). */
const char *db_arena_text(struct arena *a, struct db_stmt *st, int col);
const void *db_blob(struct db_stmt *st, int col, size_t *len);
int64_t db_changes(struct db_stmt *st);
void db_done(struct db_stmt *st);
/* Step 'st' once, for a statement that returns no row or whose row is not read; then done(). */
int db_exec(struct db_stmt *st);
/* Step 'st' once, for a change of rows, then done(): ERR_NOT_FOUND when it changed none. */
int db_exec_one(struct db_stmt *st);
/* Run 'sql' with text parameters (NULL: null) and int64 ones after them, for no row. */
int db_run(struct store *s, const char *sql, const char *const *texts, size_t nt,
           const int64_t *ints, size_t ni);
/* Reads the current row of 'st' into 'out'. */
typedef void (*db_read_fn)(struct db_stmt *st, struct arena *a, void *out);
/* Run 'sql' ($1 org, $2 mode, then the 'n' texts) for at most one row, read by 'read' into
 * 'out'; ERR_NOT_FOUND when there is none. */
int db_one(struct store *s, const char *sql, const struct store_tenant *t, const char *const *texts,
           size_t n, db_read_fn read, struct arena *a, void *out);
int db_begin(struct store *s, enum db_tx kind);
/* The dialect of the database of 's'. */
enum db_dialect db_dialect(struct store *s);
int db_commit(struct store *s);
int db_rollback(struct store *s);

/* The names the schema stores for modes and tiers, and back (unknown: live, starter). */
const char *db_mode_name(enum store_mode m);
enum store_mode db_mode(const char *name);
const char *db_tier_name(int tier);
int db_tier(const char *name);

#endif
