/* SPDX-License-Identifier: MIT */
/*
 * postgres.c: the PostgreSQL backend, over libpq; the only file that includes libpq-fe.h. For
 * now it is a connection (store_pg_open(), close, ping) and the driver of driver.h, on which
 * the operations written once (orgs.c, ...) run; the rest of store_ops comes later.
 *
 * DESIGN: a handle is one connection, used by one thread at a time (store.c's pool). Each
 * distinct SQL text becomes one server-side prepared statement of the connection ("s1", "s2",
 * ...), made by the first prepare() of the text, which also asks the server how many parameters
 * it has; the statement is then kept in a hash table by its text. A text prepared again while
 * its statement is still out (before done()) gets a second one. Parameters travel as text
 * (numbers printed here, exactly) and blobs as binary bytea; results come back whole, as text,
 * and the column readers parse them ("t"/"f" for booleans, "\x.." hex for bytea).
 *
 * A lost connection fails the statement that finds it (ERR_STORE). The next prepare(), begin()
 * or ping() resets it once, but only outside a transaction: a transaction dies with its
 * connection, so inside one prepare() fails until the caller's rollback(). The statements are
 * prepared again on the new connection as they are next used, and so is one whose tables
 * changed under it (a migration by another process: "cached plan must not change result type").
 *
 * Failures are logged with the SQL text, the SQLSTATE and the server's primary message, never
 * a parameter's value: not the DETAIL (it quotes rows), and not the message of a data
 * exception (it quotes the value refused). Conflicts (unique, exclusion, check) are the
 * caller's to handle and are not logged. As everywhere on PostgreSQL, any failure inside a
 * transaction aborts it: the caller rolls back (commit() then fails too).
 */
#include "store_int.h"

#include "../core/clock.h"

#include "../core/log.h"
#include "../core/mem.h"
#include "../core/str.h"

#include <libpq-fe.h>

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 256  /* of the statement table; the chains hold any number */
#define BYTEA_OID 17 /* pg_type.oid of bytea, fixed since PostgreSQL 7 */
#define NUM_SIZE 32  /* a printed int64 or %.17g double, with its NUL */
#define SAFE_MSG 200 /* what a client may see of a connection failure */
#define STMT_NAME 24 /* "s" and a counter */

struct pg_store;

/* A prepared statement of the connection, and one use of it (bindings, result). */
struct pg_stmt {
    struct db_stmt base;
    struct pg_store *ps;
    struct pg_stmt *next; /* in its bucket */
    uint64_t hash;
    char *sql;
    char name[STMT_NAME];
    unsigned gen; /* the connection generation it was prepared in */
    bool ready;   /* prepared on the server (in generation 'gen') */
    bool busy;    /* handed out by prepare(), not yet given back by done() */
    bool bad;     /* a binding was refused: step() fails */
    /* The parameters, as PQexecPrepared wants them; values[i] NULL is SQL null. */
    int nparams;
    const char **values;
    int *lengths;
    int *formats;           /* 0 text, 1 binary (blobs) */
    char **copies;          /* [nparams] texts copied at bind time, freed at done() */
    char (*nums)[NUM_SIZE]; /* [nparams] printed numbers */
    /* The result of the run, and the current row (-1 before the first step). */
    PGresult *res;
    int row, nrows;
    /* Decoded bytea of the current row, per column (NULL until read), freed by each step. */
    unsigned char **blobs;
    size_t *blob_lens;
    int nblobs;
};

struct pg_store {
    struct store base;
    PGconn *conn;
    struct pg_stmt *buckets[BUCKETS];
    unsigned names; /* the last statement name's number */
    unsigned gen;   /* incremented by each reset: older statements are gone from the server */
    bool in_tx;     /* between begin() and commit() or rollback() */
    bool tx_wrote;  /* a statement of the transaction changed rows */
};

static const struct db_driver pg_driver;

#define PS(s) ((struct pg_store *)(s))
#define ST(st) ((struct pg_stmt *)(st))

/* ---- Errors and the connection ---- */

/* Length of the first line of 's' (libpq messages end in a newline, some have several). */
static int first_line(const char *s)
{
    size_t n = strcspn(s ? s : "", "\r\n");
    return n > INT_MAX ? INT_MAX : (int)n;
}

/*
 * Log the failure of 'what' (a SQL text or a step's name) and tell its err_code: ERR_CONFLICT
 * for a unique, exclusion or check violation (not logged: the caller expects them), else
 * ERR_STORE. The log has the SQLSTATE and the primary message, never the DETAIL (it quotes the
 * row) nor, for data exceptions (class 22), the primary one, which quotes the value refused.
 */
static int fail(struct pg_store *ps, const char *what, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

    if (state &&
        (strcmp(state, "23505") == 0 || strcmp(state, "23514") == 0 || strcmp(state, "23P01") == 0))
        return ERR_CONFLICT;
    if (state && strncmp(state, "22", 2) == 0)
        msg = "a value was refused (message withheld: it may quote the value)";
    if (!msg)
        msg = PQerrorMessage(ps->conn);
    log_error("store: postgres: %s: %s%s%.*s%s", what, state ? state : "", state ? " " : "",
              first_line(msg), msg,
              PQstatus(ps->conn) == CONNECTION_BAD ? " (connection lost)" : "");
    if (PQstatus(ps->conn) == CONNECTION_BAD ||
        (state && (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
                   strcmp(state, "57P03") == 0)))
        store_note_reachable(false); /* lost, shut down, or starting: not our error */
    return ERR_STORE;
}

/* Run 'sql' (no parameters, no rows wanted) with the simple protocol: 0 or fail()'s code. The
 * command tag is checked against 'tag' when it is not NULL. */
static int exec_simple(struct pg_store *ps, const char *sql, const char *tag)
{
    PGresult *res = PQexec(ps->conn, sql);
    int rc = 0;

    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = fail(ps, sql, res);
    } else if (tag && strcmp(PQcmdStatus(res), tag) != 0) {
        /* COMMIT of a failed transaction answers ROLLBACK and no error. */
        log_error("store: postgres: %s: the server answered %s", sql, PQcmdStatus(res));
        rc = ERR_STORE;
    }
    PQclear(res);
    return rc;
}

/* Route the server's notices and warnings to our log instead of libpq's stderr. */
static void on_notice(void *ud, const char *msg)
{
    (void)ud;
    log_warn("store: postgres: %.*s", first_line(msg), msg);
}

/* What every session needs, on a new or reset connection: UTC timestamps, quiet notices, and
 * bytea in the hex form col_blob() decodes (whatever the database's own setting). */
static int session_setup(struct pg_store *ps)
{
    PQsetNoticeProcessor(ps->conn, on_notice, NULL);
    return exec_simple(ps,
                       "SET client_min_messages = warning; SET TimeZone = 'UTC';"
                       " SET bytea_output = hex",
                       NULL);
}

/*
 * Make sure the connection is up before 'what' (prepare, begin, ping): reset it once when it is
 * broken and no transaction was open on it. 0, or ERR_STORE (logged).
 */
static int reconnect(struct pg_store *ps, const char *what)
{
    if (PQstatus(ps->conn) == CONNECTION_OK)
        return 0;
    if (ps->in_tx) {
        log_error("store: postgres: %s: the connection was lost inside a transaction;"
                  " roll it back first",
                  what);
        return ERR_STORE;
    }
    log_warn("store: postgres: the connection was lost; reconnecting");
    PQreset(ps->conn);
    ps->gen++;
    if (PQstatus(ps->conn) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(ps->conn);
        log_error("store: postgres: %s: reconnecting failed: %.*s", what, first_line(msg), msg);
        store_note_reachable(false);
        return ERR_STORE;
    }
    log_info("store: postgres: connected again");
    return session_setup(ps);
}

/* ---- Statements ---- */

/* FNV-1a of 'sql', the statement table's key. */
static uint64_t text_hash(const char *sql)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)sql; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return h;
}

/* Free the decoded blobs of the current row. */
static void drop_blobs(struct pg_stmt *st)
{
    for (int i = 0; i < st->nblobs; i++) {
        free(st->blobs[i]);
        st->blobs[i] = NULL;
    }
}

/* Drop the bindings: every parameter is null again, the copies are freed. */
static void drop_params(struct pg_stmt *st)
{
    for (int i = 0; i < st->nparams; i++) {
        free(st->copies[i]);
        st->copies[i] = NULL;
        st->values[i] = NULL;
        st->lengths[i] = 0;
        st->formats[i] = 0;
    }
    st->bad = false;
}

/* Free the parameter arrays (sized for st->nparams). */
static void free_params(struct pg_stmt *st)
{
    drop_params(st);
    free(st->values);
    free(st->lengths);
    free(st->formats);
    free(st->copies);
    free(st->nums);
    st->values = NULL;
    st->lengths = st->formats = NULL;
    st->copies = NULL;
    st->nums = NULL;
    st->nparams = 0;
}

/* Free 'st' entirely (its server-side statement goes with the connection). */
static void stmt_free(struct pg_stmt *st)
{
    PQclear(st->res);
    drop_blobs(st);
    free(st->blobs);
    free(st->blob_lens);
    free_params(st);
    free(st->sql);
    free(st);
}

/*
 * Prepare 'st' on the server under a new name (one a failed attempt may have left taken cannot
 * clash), letting the server infer the parameters' types, and size its parameter arrays by the
 * count the server reports. 0 or ERR_STORE (logged).
 */
static int server_prepare(struct pg_stmt *st)
{
    struct pg_store *ps = st->ps;
    PGresult *res;
    int rc = 0, n;

    snprintf(st->name, sizeof(st->name), "s%u", ++ps->names);
    res = PQprepare(ps->conn, st->name, st->sql, 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        rc = fail(ps, st->sql, res);
        goto out;
    }
    PQclear(res);
    res = PQdescribePrepared(ps->conn, st->name);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        rc = fail(ps, st->sql, res);
        goto out;
    }
    n = PQnparams(res);
    if (n != st->nparams) {
        free_params(st);
        st->nparams = n;
        if (n > 0) {
            st->values = xcalloc((size_t)n, sizeof(*st->values));
            st->lengths = xcalloc((size_t)n, sizeof(*st->lengths));
            st->formats = xcalloc((size_t)n, sizeof(*st->formats));
            st->copies = xcalloc((size_t)n, sizeof(*st->copies));
            st->nums = xcalloc((size_t)n, sizeof(*st->nums));
        }
    }
    st->gen = ps->gen;
    st->ready = true;
out:
    if (rc)
        rc = ERR_STORE; /* a statement that cannot be prepared is never a conflict */
    PQclear(res);
    return rc;
}

/* Unlink 'st' from its bucket and free it. */
static void stmt_forget(struct pg_store *ps, struct pg_stmt *st)
{
    struct pg_stmt **p = &ps->buckets[st->hash % BUCKETS];
    while (*p != st)
        p = &(*p)->next;
    *p = st->next;
    stmt_free(st);
}

/* Tests (store.c, fault injection): whether statement 'sql' fails here without running. The
 * ways out of a transaction (ROLLBACK, ROLLBACK TO SAVEPOINT, RELEASE SAVEPOINT) never do. */
static bool faulted(const char *sql)
{
    return strncmp(sql, "ROLLBACK", 8) != 0 && strncmp(sql, "RELEASE", 7) != 0 && store_fault();
}

/* See driver.h: the cached statement of 'sql', prepared on first use; NULL on failure. */
static struct db_stmt *d_prepare(struct store *s, const char *sql)
{
    struct pg_store *ps = PS(s);
    uint64_t h = text_hash(sql);
    struct pg_stmt **bucket = &ps->buckets[h % BUCKETS];
    struct pg_stmt *st;
    bool fresh = false;

    if (faulted(sql) || reconnect(ps, sql))
        return NULL;
    for (st = *bucket; st; st = st->next) {
        if (!st->busy && st->hash == h && strcmp(st->sql, sql) == 0)
            break;
    }
    if (!st) {
        st = xcalloc(1, sizeof(*st));
        st->base.drv = &pg_driver;
        st->ps = ps;
        st->hash = h;
        st->sql = xstrdup(sql);
        st->next = *bucket;
        *bucket = st;
        fresh = true;
    }
    if ((!st->ready || st->gen != ps->gen) && server_prepare(st)) {
        if (fresh)
            stmt_forget(ps, st); /* a text that does not compile is not kept */
        else
            st->ready = false;
        return NULL;
    }
    st->busy = true;
    st->row = -1;
    return &st->base;
}

/* The 0-based slot of parameter 'i' with its old binding dropped, or -1 (logged; the
 * statement will then fail to run). */
static int slot(struct pg_stmt *st, int i)
{
    if (i < 1 || i > st->nparams) {
        log_error("store: postgres: parameter %d bound, the statement has %d: %s", i, st->nparams,
                  st->sql);
        st->bad = true;
        return -1;
    }
    free(st->copies[i - 1]);
    st->copies[i - 1] = NULL;
    st->values[i - 1] = NULL;
    st->lengths[i - 1] = 0;
    st->formats[i - 1] = 0;
    return i - 1;
}

/* See driver.h. */
static void d_bind_null(struct db_stmt *base, int i)
{
    (void)slot(ST(base), i);
}

/* See driver.h: sent as its decimal text. */
static void d_bind_int64(struct db_stmt *base, int i, int64_t v)
{
    struct pg_stmt *st = ST(base);
    int k = slot(st, i);
    if (k < 0)
        return;
    snprintf(st->nums[k], NUM_SIZE, "%" PRId64, v);
    st->values[k] = st->nums[k];
}

/* See driver.h: sent as text with 17 significant digits, which read back to the same double. */
static void d_bind_double(struct db_stmt *base, int i, double v)
{
    struct pg_stmt *st = ST(base);
    int k = slot(st, i);
    if (k < 0)
        return;
    snprintf(st->nums[k], NUM_SIZE, "%.17g", v);
    st->values[k] = st->nums[k];
}

/* See driver.h: a text up to its NUL is borrowed until done(); one with a length is copied (the
 * protocol's text values end at a NUL). */
static void d_bind_text(struct db_stmt *base, int i, const char *v, size_t len)
{
    struct pg_stmt *st = ST(base);
    int k = slot(st, i);
    if (k < 0 || !v)
        return;
    if (len == (size_t)-1) {
        st->values[k] = v;
        return;
    }
    st->copies[k] = xstrndup(v, len);
    st->values[k] = st->copies[k];
}

/* See driver.h: borrowed until done() and sent in binary, which a bytea parameter reads as its
 * bytes. */
static void d_bind_blob(struct db_stmt *base, int i, const void *v, size_t len)
{
    struct pg_stmt *st = ST(base);
    int k = slot(st, i);
    if (k < 0 || !v)
        return;
    if (len > INT_MAX) {
        log_error("store: postgres: a blob of %zu bytes is too large: %s", len, st->sql);
        st->bad = true;
        return;
    }
    st->values[k] = v;
    st->lengths[k] = (int)len;
    st->formats[k] = 1;
}

/* Whether 'res' failed because a table of the statement changed since it was prepared
 * ("cached plan must not change result type", feature_not_supported at execution): the
 * statement is good again once prepared anew. */
static bool stale_plan(const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    return PQresultStatus(res) == PGRES_FATAL_ERROR && state && strcmp(state, "0A000") == 0;
}

/* Execute 'st' with its bindings; the caller clears the result. */
static PGresult *execute(struct pg_stmt *st)
{
    return PQexecPrepared(st->ps->conn, st->name, st->nparams, st->values, st->lengths, st->formats,
                          0);
}

/* Whether 'res' is of a statement that changed rows (a SELECT's tag counts rows too). */
static bool changed(PGresult *res)
{
    const char *tag = PQcmdStatus(res);
    const char *n = PQcmdTuples(res);
    bool write = strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 ||
                 strncmp(tag, "DELETE", 6) == 0 || strncmp(tag, "MERGE", 5) == 0;
    return write && n[0] && strcmp(n, "0") != 0;
}

/*
 * A change committed: move the data version of every node (pg_data_version) and this process's
 * generation. After the commit, not before it: a node that read the new version before the
 * change was visible would keep the old data under it. (A node that dies between the two leaves
 * the version unmoved; store_generation() moves the generation every second anyway.)
 */
static void note_change(struct pg_store *ps)
{
    exec_simple(ps, "SELECT nextval('data_changes')", NULL);
    store_note_commit();
}

/*
 * Run 'st' with its bindings and keep the whole result: 0, ERR_CONFLICT or ERR_STORE. A
 * statement whose tables changed since it was prepared (a migration by another process) is
 * prepared again and retried once outside a transaction; inside one the failure has aborted
 * the transaction, so it fails and is prepared again at its next prepare().
 */
static int run(struct pg_stmt *st)
{
    struct pg_store *ps = st->ps;
    PGresult *res;

    if (st->bad) {
        log_error("store: postgres: not run, a binding was refused: %s", st->sql);
        return ERR_STORE;
    }
    if (!st->ready || st->gen != ps->gen) {
        log_error("store: postgres: not run, it must be prepared again (the connection was"
                  " reset or its tables changed): %s",
                  st->sql);
        return ERR_STORE;
    }
    res = execute(st);
    if (stale_plan(res)) {
        st->ready = false;
        if (!ps->in_tx && server_prepare(st) == 0) {
            PQclear(res);
            res = execute(st);
        }
    }
    switch (PQresultStatus(res)) {
    case PGRES_TUPLES_OK:
    case PGRES_COMMAND_OK:
    case PGRES_EMPTY_QUERY:
        store_note_reachable(true);
        break;
    default: {
        int rc = fail(ps, st->sql, res);
        PQclear(res);
        return rc;
    }
    }
    if (changed(res)) {
        if (ps->in_tx)
            ps->tx_wrote = true; /* told at its commit */
        else
            note_change(ps); /* a change committed on its own */
    }
    st->res = res;
    st->nrows = PQntuples(res);
    st->row = -1;
    if (PQnfields(res) > st->nblobs) {
        free(st->blobs);
        free(st->blob_lens);
        st->nblobs = PQnfields(res);
        st->blobs = xcalloc((size_t)st->nblobs, sizeof(*st->blobs));
        st->blob_lens = xcalloc((size_t)st->nblobs, sizeof(*st->blob_lens));
    }
    return 0;
}

/* See driver.h: the first call runs the statement and the rows are then read from its result,
 * which the connection holds whole. */
static int d_step(struct db_stmt *base, bool *row)
{
    struct pg_stmt *st = ST(base);

    *row = false;
    drop_blobs(st);
    if (!st->res) {
        int rc = faulted(st->sql) ? ERR_STORE : run(st);
        if (rc)
            return rc;
    }
    if (st->row < st->nrows)
        st->row++;
    *row = st->row < st->nrows;
    return 0;
}

/* The value of column 'col' of the current row, NULL when it is null or there is none. */
static const char *value(struct pg_stmt *st, int col)
{
    if (!st->res || st->row < 0 || st->row >= st->nrows || col < 0 || col >= PQnfields(st->res))
        return NULL;
    if (PQgetisnull(st->res, st->row, col))
        return NULL;
    return PQgetvalue(st->res, st->row, col);
}

/* See driver.h. */
static bool d_is_null(struct db_stmt *base, int col)
{
    return value(ST(base), col) == NULL;
}

/* See driver.h: a boolean reads 1 or 0, a fraction (numeric, float) truncates toward zero and
 * saturates at the int64 range, as in SQLite. */
static int64_t d_col_int64(struct db_stmt *base, int col)
{
    const char *v = value(ST(base), col);
    int64_t n;
    double d;

    if (!v)
        return 0;
    if (str_to_i64(str_c(v), &n) == 0)
        return n;
    if (strcmp(v, "t") == 0 || strcmp(v, "f") == 0)
        return v[0] == 't';
    d = strtod(v, NULL);
    if (isnan(d))
        return 0;
    if (d >= 9223372036854775807.0)
        return INT64_MAX;
    if (d <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)d;
}

/* See driver.h: a boolean reads 1.0 or 0.0. */
static double d_col_double(struct db_stmt *base, int col)
{
    const char *v = value(ST(base), col);

    if (!v)
        return 0.0;
    if (strcmp(v, "t") == 0 || strcmp(v, "f") == 0)
        return v[0] == 't' ? 1.0 : 0.0;
    return strtod(v, NULL);
}

/* See driver.h: the result's own text (a bytea column reads as its "\x.." hex form). */
static const char *d_col_text(struct db_stmt *base, int col, size_t *len)
{
    struct pg_stmt *st = ST(base);
    const char *v = value(st, col);

    if (len)
        *len = v ? (size_t)PQgetlength(st->res, st->row, col) : 0;
    return v;
}

/* The bytes of the hex text 'v' of 'n' characters ("\x" already skipped) into 'out'; false
 * when it is not hex (the server's bytea_output is not "hex"). */
static bool hex_decode(const char *v, size_t n, unsigned char *out)
{
    if (n % 2)
        return false;
    for (size_t i = 0; i < n; i += 2) {
        int hi = str_hex_digit((unsigned char)v[i]), lo = str_hex_digit((unsigned char)v[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}

/* See driver.h: a bytea column is decoded from its hex text into a buffer of the statement,
 * kept until the next step() or done(); another column reads as its text's bytes. An empty
 * blob is a non-NULL pointer with '*len' 0. */
static const void *d_col_blob(struct db_stmt *base, int col, size_t *len)
{
    struct pg_stmt *st = ST(base);
    const char *v = value(st, col);
    size_t n, dummy;

    if (!len)
        len = &dummy;
    *len = 0;
    if (!v)
        return NULL;
    n = (size_t)PQgetlength(st->res, st->row, col);
    if (PQftype(st->res, col) != BYTEA_OID) {
        *len = n;
        return v;
    }
    if (!st->blobs[col]) {
        if (n < 2 || v[0] != '\\' || v[1] != 'x') {
            log_error("store: postgres: column %d is bytea but not in hex: %s", col, st->sql);
            return NULL;
        }
        st->blobs[col] = xmalloc((n - 2) / 2 + 1);
        if (!hex_decode(v + 2, n - 2, st->blobs[col])) {
            log_error("store: postgres: column %d is bytea but not in hex: %s", col, st->sql);
            free(st->blobs[col]);
            st->blobs[col] = NULL;
            return NULL;
        }
        st->blob_lens[col] = (n - 2) / 2;
    }
    *len = st->blob_lens[col];
    return st->blobs[col];
}

/* See driver.h: the count of the command tag (INSERT, UPDATE, DELETE, MERGE); 0 for any other
 * statement, a SELECT included. */
static int64_t d_changes(struct db_stmt *base)
{
    struct pg_stmt *st = ST(base);
    static const char *const tags[] = {"INSERT ", "UPDATE ", "DELETE ", "MERGE "};
    const char *tag;
    int64_t n = 0;

    if (!st->res)
        return 0;
    tag = PQcmdStatus(st->res);
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        if (strncmp(tag, tags[i], strlen(tags[i])) == 0) {
            if (str_to_i64(str_c(PQcmdTuples(st->res)), &n))
                n = 0;
            break;
        }
    }
    return n;
}

/* See driver.h: the result and bindings are dropped, the statement is the connection's again. */
static void d_done(struct db_stmt *base)
{
    struct pg_stmt *st = ST(base);

    if (!st)
        return;
    PQclear(st->res);
    st->res = NULL;
    st->nrows = 0;
    st->row = -1;
    drop_blobs(st);
    drop_params(st);
    st->busy = false;
}

/* ---- Transactions ---- */

/* See driver.h: a read takes a snapshot (REPEATABLE READ); a write runs in READ COMMITTED, and
 * its statements lock the rows they change. */
static int d_begin(struct store *s, enum db_tx kind)
{
    struct pg_store *ps = PS(s);
    int rc;

    if (ps->in_tx) {
        log_error("store: postgres: begin inside a transaction");
        return ERR_STORE;
    }
    if (faulted("BEGIN"))
        return ERR_STORE;
    rc = reconnect(ps, "begin");
    if (!rc)
        rc = exec_simple(ps, kind == DB_TX_READ ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN",
                         NULL);
    if (rc)
        return ERR_STORE;
    ps->in_tx = true;
    return 0;
}

/* See driver.h: a transaction that an error had aborted is rolled back by the server and
 * reported here as ERR_STORE (a deferred constraint may give ERR_CONFLICT). */
static int d_commit(struct store *s)
{
    struct pg_store *ps = PS(s);
    int rc;
    if (faulted("COMMIT"))
        return ERR_STORE; /* the transaction stays open: the caller rolls it back */
    rc = exec_simple(ps, "COMMIT", "COMMIT");
    ps->in_tx = false;
    if (!rc && ps->tx_wrote)
        note_change(ps);
    ps->tx_wrote = false;
    return rc;
}

/* See driver.h: also the way out of a transaction whose connection was lost (ERR_STORE then,
 * and the next prepare() or begin() reconnects). */
static int d_rollback(struct store *s)
{
    struct pg_store *ps = PS(s);
    /* A test build's broken rollback (store_int.h) commits instead. */
    int rc = exec_simple(ps, STORE_BROKEN_ROLLBACK ? "COMMIT" : "ROLLBACK", NULL);
    ps->in_tx = false;
    ps->tx_wrote = false;
    return rc ? ERR_STORE : 0;
}

static const struct db_driver pg_driver = {
    .name = "postgres",
    .dialect = DB_POSTGRES,
    .prepare = d_prepare,
    .bind_null = d_bind_null,
    .bind_int64 = d_bind_int64,
    .bind_double = d_bind_double,
    .bind_text = d_bind_text,
    .bind_blob = d_bind_blob,
    .step = d_step,
    .is_null = d_is_null,
    .col_int64 = d_col_int64,
    .col_double = d_col_double,
    .col_text = d_col_text,
    .col_blob = d_col_blob,
    .changes = d_changes,
    .done = d_done,
    .begin = d_begin,
    .commit = d_commit,
    .rollback = d_rollback,
};

/* ---- The store ---- */

/* Free every statement, close the connection and free 's'. */
static void pg_close(struct store *s)
{
    struct pg_store *ps = PS(s);

    for (size_t i = 0; i < BUCKETS; i++) {
        while (ps->buckets[i]) {
            struct pg_stmt *st = ps->buckets[i];
            ps->buckets[i] = st->next;
            stmt_free(st);
        }
    }
    PQfinish(ps->conn);
    free(ps);
}

/* 0 when the server answers; a lost connection is reset first (outside a transaction). */
static int pg_ping(struct store *s)
{
    struct pg_store *ps = PS(s);
    int rc = reconnect(ps, "ping");
    return rc ? rc : exec_simple(ps, "SELECT 1", NULL);
}

extern const char *const store_pg_migrations[];
extern const size_t store_pg_migrations_count;

#define MIGRATE_LOCK 7294001 /* the advisory lock key of 'workforce migrate' */

/* The one int64 of the one-row answer of 'sql', run outside any transaction. */
static int query_int64(struct pg_store *ps, const char *sql, int64_t *out)
{
    PGresult *res = PQexec(ps->conn, sql);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) < 1)
        rc = fail(ps, sql, res);
    else
        *out = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return rc;
}

/*
 * Apply the migrations this database lacks, each in a transaction of its own with its row in
 * schema_migrations, under a session advisory lock: several nodes starting at once migrate one
 * at a time, and the later ones find nothing to do.
 */
static int pg_migrate(struct store *s, struct err *e)
{
    struct pg_store *ps = PS(s);
    int64_t have = 0;
    int rc = reconnect(ps, "migrate");
    char sql[128];

    if (!rc) {
        snprintf(sql, sizeof(sql), "SELECT pg_advisory_lock(%d)", MIGRATE_LOCK);
        rc = exec_simple(ps, sql, NULL);
    }
    if (rc)
        goto out;
    rc = exec_simple(ps,
                     "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY,"
                     " applied_at BIGINT NOT NULL)",
                     NULL);
    if (!rc)
        rc = query_int64(ps, "SELECT coalesce(max(version), 0) FROM schema_migrations", &have);
    if (!rc && have > (int64_t)store_pg_migrations_count)
        rc = err_set(e, ERR_STORE, "invalid_setting", "WORKFORCE_DATABASE",
                     "the database schema (version %lld) is newer than this build (%zu)",
                     (long long)have, store_pg_migrations_count);
    for (size_t v = (size_t)have + 1; !rc && v <= store_pg_migrations_count; v++) {
        rc = exec_simple(ps, "BEGIN", NULL);
        if (!rc)
            rc = exec_simple(ps, store_pg_migrations[v - 1], NULL);
        snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%zu, %lld)", v,
                 (long long)clock_now_ms());
        if (!rc)
            rc = exec_simple(ps, sql, NULL);
        if (!rc)
            rc = exec_simple(ps, "COMMIT", "COMMIT");
        if (rc)
            exec_simple(ps, "ROLLBACK", NULL);
        else
            log_info("store: migrated to schema version %zu", v);
    }
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_unlock(%d)", MIGRATE_LOCK);
    exec_simple(ps, sql, NULL);
    if (!rc) {
        /* Pages are cut by (name, id) and other text keys compared byte by byte, as SQLite
         * does; a linguistic collation would order them otherwise and break the cursors. */
        int64_t bytewise = 0;
        rc = query_int64(ps,
                         "SELECT CASE WHEN datcollate IN ('C', 'POSIX', 'C.UTF-8', 'C.utf8',"
                         " 'ucs_basic') THEN 1 ELSE 0 END FROM pg_database WHERE datname ="
                         " current_database()",
                         &bytewise);
        if (!rc && !bytewise)
            rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_DATABASE",
                         "the database must sort text byte by byte: create it with"
                         " LC_COLLATE 'C' (createdb --locale=C --template=template0)");
    }
out:
    if (rc && e && !e->code)
        err_set(e, ERR_STORE, "internal_error", NULL, "the database could not be migrated");
    return rc;
}

/*
 * A number that moves when the data changed: the last value of the sequence that every change
 * takes after its commit (note_change()), so the caches of every node see another node's change
 * at their next look. The rate limits kept in the database and the database's own upkeep do not
 * move it (the write-ahead log's position, used before, moved with every admitted request).
 */
static int pg_data_version(struct store *s, int64_t *out)
{
    struct pg_store *ps = PS(s);
    int rc = reconnect(ps, "data version");
    if (!rc)
        rc = query_int64(ps, "SELECT last_value FROM data_changes", out);
    return rc;
}

/* The advisory locks of store_lock_*(): (LOCK_BASE + kind, sub) in the two-key space, apart
 * from MIGRATE_LOCK's one-key one. */
#define LOCK_BASE 7294100

/* A session advisory lock: held until released or the connection ends (a node that dies
 * releases it with its connection). */
static int pg_lock(struct store *s, int key, uint32_t sub, bool wait)
{
    struct pg_store *ps = PS(s);
    char sql[128];
    int64_t got = 1;
    int rc = reconnect(ps, "lock");
    if (wait)
        snprintf(sql, sizeof(sql), "SELECT pg_advisory_lock(%d, %d)", LOCK_BASE + key, (int)sub);
    else
        snprintf(sql, sizeof(sql),
                 "SELECT CASE WHEN pg_try_advisory_lock(%d, %d) THEN 1 ELSE 0 END", LOCK_BASE + key,
                 (int)sub);
    if (!rc)
        rc = wait ? exec_simple(ps, sql, NULL) : query_int64(ps, sql, &got);
    return rc ? rc : got ? 0 : ERR_CONFLICT;
}

static void pg_lock_release(struct store *s, int key, uint32_t sub)
{
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_unlock(%d, %d)", LOCK_BASE + key, (int)sub);
    exec_simple(PS(s), sql, NULL);
}

static const struct store_ops pg_ops = {
    .version = 1,
    .name = "postgres",
    .close = pg_close,
    .ping = pg_ping,
    .migrate = pg_migrate,
    .data_version = pg_data_version,
    .shared_version = true,
    .lock = pg_lock,
    .lock_release = pg_lock_release,
};

/* ---- Opening ---- */

/* 'msg' (first line) into 'out' of 'n' bytes with every occurrence of 'secret' (when not NULL
 * or empty) written "***". */
static void redact(const char *msg, const char *secret, char *out, size_t n)
{
    size_t len = (size_t)first_line(msg), slen = secret ? strlen(secret) : 0, o = 0;

    if (!n)
        return;
    for (size_t i = 0; i < len && o + 1 < n;) {
        if (slen && i + slen <= len && memcmp(msg + i, secret, slen) == 0) {
            for (const char *r = "***"; *r && o + 1 < n; r++)
                out[o++] = *r;
            i += slen;
        } else {
            out[o++] = msg[i++];
        }
    }
    out[o] = '\0';
}

/* The value that follows 'from' in 'url', up to the first of 'stop' (NULL when 'from' is
 * absent or the value empty); the caller frees it. */
static char *secret_after(const char *url, const char *from, const char *stop)
{
    const char *p = strstr(url, from);
    size_t n;

    if (!p)
        return NULL;
    p += strlen(from);
    n = strcspn(p, stop);
    return n ? xstrndup(p, n) : NULL;
}

/* The password as written in a URL's user info (postgres://user:PASSWORD@host), or NULL; the
 * caller frees it. */
static char *userinfo_password(const char *url)
{
    const char *p = strstr(url, "://"), *end, *at = NULL, *colon;

    if (!p)
        return NULL;
    p += 3;
    end = p + strcspn(p, "/?#");
    for (const char *q = p; q < end; q++) {
        if (*q == '@')
            at = q;
    }
    if (!at)
        return NULL;
    colon = memchr(p, ':', (size_t)(at - p));
    return colon && at > colon + 1 ? xstrndup(colon + 1, (size_t)(at - colon - 1)) : NULL;
}

/*
 * Why the connection of 'url' failed, into 'out' (n bytes): libpq's first line, with no
 * password in it. A malformed URL's message may quote a piece of it as written, so the
 * password is removed as written (user info, or "password=" of a query or a key/value string)
 * and as libpq decoded it.
 */
static void connect_reason(PGconn *conn, const char *url, char *out, size_t n)
{
    char *written[] = {userinfo_password(url), secret_after(url, "password=", " \t\r\n&#")};
    const char *msg = conn ? PQerrorMessage(conn) : "out of memory", *decoded = NULL;
    PQconninfoOption *opts = conn ? PQconninfo(conn) : NULL;
    char a[SAFE_MSG] = "", b[SAFE_MSG] = ""; /* zeroed: analyzers cannot follow strcspn() */

    for (PQconninfoOption *o = opts; o && o->keyword; o++) {
        if (strcmp(o->keyword, "password") == 0)
            decoded = o->val;
    }
    redact(msg, written[0], a, sizeof(a));
    redact(a, written[1], b, sizeof(b));
    redact(b, decoded, out, n);
    PQconninfoFree(opts);
    free(written[0]);
    free(written[1]);
}

/*
 * Connect to the PostgreSQL database of 'url' (postgres://user@host:port/db, or any libpq
 * connection string) and set the session up: UTC, notices from warnings up, to our log. A
 * connect_timeout of 10 s and application_name "workforce" apply unless the URL says
 * otherwise. On success '*out' is the caller's (store_close()); on failure it is NULL and 'e'
 * says why, with no password (ERR_STORE, "service_unavailable", param "WORKFORCE_DATABASE").
 */
int store_pg_open(const char *url, struct store **out, struct err *e)
{
    /* Entries before "dbname" are defaults that the URL (expanded from dbname) overrides. */
    static const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {"10", "workforce", url, NULL};
    struct pg_store *ps = xcalloc(1, sizeof(*ps));
    char reason[SAFE_MSG];
    int rc = 0;

    ps->base.ops = &pg_ops;
    ps->base.drv = &pg_driver;
    ps->conn = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(ps->conn) != CONNECTION_OK) {
        connect_reason(ps->conn, url, reason, sizeof(reason));
        log_error("store: cannot connect to PostgreSQL: %s", reason);
        rc = err_set(e, ERR_STORE, "service_unavailable", "WORKFORCE_DATABASE",
                     "cannot connect to PostgreSQL: %s", reason);
        goto out;
    }
    if (session_setup(ps))
        rc = err_set(e, ERR_STORE, "service_unavailable", "WORKFORCE_DATABASE",
                     "cannot set up the PostgreSQL session (the log says why)");
out:
    if (rc) {
        pg_close(&ps->base);
        ps = NULL;
    }
    *out = ps ? &ps->base : NULL;
    return rc;
}
