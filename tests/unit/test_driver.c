/* SPDX-License-Identifier: MIT */
/*
 * The driver test: one set of checks of driver.h, through s->drv only, run against every backend
 * at hand: SQLite ":memory:" always, and PostgreSQL when WORKFORCE_TEST_PG_URL is set (for
 * example from `tests/pg/pg.sh start DIR`). The SQL is the dialect both read alike, with
 * PostgreSQL's $1 .. $n parameters: a scratch TEMP table, parameters out of order and used
 * twice, nulls, blobs with 0 and 0xff bytes, int64 limits, UTF-8, changes(), conflicts,
 * transactions, RETURNING and ON CONFLICT, and the statement cache.
 */
#include "../../src/store/store_int.h"
#include "t.h"

#include <stdint.h>
#include <stdlib.h>

static const unsigned char blob[] = {0x00, 0xff, 'x', 0x00, 0xff};
static const char utf8[] = "na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80"; /* naïve € 😀 */

/* Prepare 'sql', step it once and give it back: its step()'s code, or -1 when prepare failed. */
static int run_sql(struct store *s, const char *sql)
{
    struct db_stmt *st = s->drv->prepare(s, sql);
    bool row;
    int rc;

    if (!st)
        return -1;
    rc = st->drv->step(st, &row);
    st->drv->done(st);
    return rc;
}

/* The number of rows of t whose id is 'id' (-1 on failure). */
static int64_t count_id(struct store *s, const char *id)
{
    struct db_stmt *st = s->drv->prepare(s, "SELECT count(*) FROM t WHERE id = $1");
    int64_t n = -1;
    bool row = false;

    if (!st)
        return -1;
    st->drv->bind_text(st, 1, id, (size_t)-1);
    if (st->drv->step(st, &row) == 0 && row)
        n = st->drv->col_int64(st, 0);
    st->drv->done(st);
    return n;
}

/* Insert (id, n) and return step()'s code (-1 when prepare failed). */
static int insert_id(struct store *s, const char *id, int64_t n)
{
    struct db_stmt *st = s->drv->prepare(s, "INSERT INTO t (id, n) VALUES ($1, $2)");
    bool row;
    int rc;

    if (!st)
        return -1;
    st->drv->bind_text(st, 1, id, (size_t)-1);
    st->drv->bind_int64(st, 2, n);
    rc = st->drv->step(st, &row);
    st->drv->done(st);
    return rc;
}

/* The table, and rows written with every kind of value. */
static void check_insert(struct store *s)
{
    struct db_stmt *st;
    bool row = true;

    is_int(run_sql(s, "CREATE TEMP TABLE t (id TEXT PRIMARY KEY, n BIGINT, x DOUBLE PRECISION,"
                      " b BYTEA, flag BOOLEAN, CHECK (n IS NULL OR n <> 13))"),
           0, "create a scratch table");

    /* Parameters numbered out of their order in the text. */
    st = s->drv->prepare(s, "INSERT INTO t (id, n, x, b, flag) VALUES ($3, $1, $2, $5, $4)");
    ok(st != NULL, "prepare an insert");
    if (!st)
        return;
    st->drv->bind_int64(st, 1, INT64_MAX);
    st->drv->bind_double(st, 2, 1.0 / 3.0);
    st->drv->bind_text(st, 3, "max", (size_t)-1);
    st->drv->bind_int64(st, 4, 1);
    st->drv->bind_blob(st, 5, blob, sizeof(blob));
    is_int(st->drv->step(st, &row), 0, "insert out-of-order parameters");
    ok(!row, "an insert has no row");
    is_int(st->drv->changes(st), 1, "one row inserted");
    st->drv->done(st);

    /* The same statement again: nulls, the other end of the range, text with a length. */
    st = s->drv->prepare(s, "INSERT INTO t (id, n, x, b, flag) VALUES ($3, $1, $2, $5, $4)");
    ok(st != NULL, "prepare the insert again");
    if (!st)
        return;
    st->drv->bind_int64(st, 1, INT64_MIN);
    st->drv->bind_null(st, 2);
    st->drv->bind_text(st, 3, "min and more", 3); /* "min" */
    st->drv->bind_null(st, 4);
    st->drv->bind_blob(st, 5, NULL, 0);
    is_int(st->drv->step(st, &row), 0, "insert nulls");
    st->drv->done(st);

    /* A parameter used twice, for the same type. */
    st = s->drv->prepare(s, "INSERT INTO t (id, n, x, flag) VALUES ($1, $2, $3, $4),"
                            " ($1 || '-2', -42, $3, $4)");
    ok(st != NULL, "prepare an insert using $1 twice");
    if (!st)
        return;
    st->drv->bind_text(st, 1, utf8, (size_t)-1);
    st->drv->bind_int64(st, 2, -1);
    st->drv->bind_double(st, 3, -1e300);
    st->drv->bind_int64(st, 4, 0);
    is_int(st->drv->step(st, &row), 0, "insert two rows");
    is_int(st->drv->changes(st), 2, "two rows inserted");
    st->drv->done(st);
}

/* Every kind of value reads back as written. */
static void check_read(struct store *s)
{
    struct db_stmt *st = s->drv->prepare(s, "SELECT id, n, x, b, flag FROM t WHERE id = $1");
    const unsigned char *b;
    const char *text;
    size_t len = 99;
    bool row = false;

    ok(st != NULL, "prepare a select");
    if (!st)
        return;
    st->drv->bind_text(st, 1, "max", (size_t)-1);
    ok(st->drv->step(st, &row) == 0 && row, "the row of max");
    if (row) {
        text = st->drv->col_text(st, 0, &len);
        ok(text && strcmp(text, "max") == 0 && len == 3, "text and its length");
        is_int(st->drv->col_int64(st, 1), INT64_MAX, "INT64_MAX");
        ok(st->drv->col_double(st, 2) == 1.0 / 3.0, "a double exactly");
        b = st->drv->col_blob(st, 3, &len);
        ok(b && len == sizeof(blob) && memcmp(b, blob, len) == 0, "a blob with 0 and 0xff bytes");
        ok(st->drv->col_blob(st, 3, &len) == b, "reading a blob again gives the same pointer");
        is_int(st->drv->col_int64(st, 4), 1, "a true boolean reads 1");
        ok(!st->drv->is_null(st, 4), "a value is not null");
    }
    ok(st->drv->step(st, &row) == 0 && !row, "one row only");
    st->drv->done(st);

    st = s->drv->prepare(s, "SELECT id, n, x, b, flag FROM t WHERE id = $1");
    ok(st != NULL, "prepare the select again");
    if (!st)
        return;
    st->drv->bind_text(st, 1, "min", (size_t)-1);
    ok(st->drv->step(st, &row) == 0 && row, "the row of min");
    if (row) {
        is_int(st->drv->col_int64(st, 1), INT64_MIN, "INT64_MIN");
        ok(st->drv->is_null(st, 2) && st->drv->is_null(st, 3) && st->drv->is_null(st, 4),
           "nulls are null");
        ok(st->drv->col_double(st, 2) == 0.0, "a null double reads 0.0");
        is_int(st->drv->col_int64(st, 4), 0, "a null int64 reads 0");
        ok(st->drv->col_text(st, 2, &len) == NULL && len == 0, "a null text reads NULL");
        ok(st->drv->col_blob(st, 3, &len) == NULL && len == 0, "a null blob reads NULL");
    }
    st->drv->done(st);

    st = s->drv->prepare(s, "SELECT id, n, x, flag FROM t WHERE n = $1");
    ok(st != NULL, "prepare a select by n");
    if (!st)
        return;
    st->drv->bind_int64(st, 1, -1);
    ok(st->drv->step(st, &row) == 0 && row, "the UTF-8 row");
    if (row) {
        text = st->drv->col_text(st, 0, &len);
        ok(text && strcmp(text, utf8) == 0 && len == strlen(utf8), "UTF-8 text and its length");
        ok(st->drv->col_double(st, 2) == -1e300, "a large negative double");
        is_int(st->drv->col_int64(st, 3), 0, "a false boolean reads 0");
    }
    st->drv->done(st);
}

/* changes(), constraint conflicts, a bad text, and stepping to the end. */
static void check_changes(struct store *s)
{
    struct db_stmt *st;
    bool row;
    int n = 0;

    st = s->drv->prepare(s, "UPDATE t SET x = $1 WHERE id = $2 OR id = $3");
    ok(st != NULL, "prepare an update");
    if (st) {
        st->drv->bind_double(st, 1, 0.5);
        st->drv->bind_text(st, 2, "max", (size_t)-1);
        st->drv->bind_text(st, 3, "min", (size_t)-1);
        is_int(st->drv->step(st, &row), 0, "update");
        is_int(st->drv->changes(st), 2, "changes() counts the two rows updated");
        st->drv->done(st);
    }

    is_int(insert_id(s, "max", 5), ERR_CONFLICT, "a duplicate primary key conflicts");
    is_int(insert_id(s, "thirteen", 13), ERR_CONFLICT, "a check constraint conflicts");
    is_int(count_id(s, "thirteen"), 0, "the refused row is absent");
    ok(s->drv->prepare(s, "SELEKT nonsense FROM") == NULL, "a syntax error: prepare gives NULL");
    ok(s->drv->prepare(s, "SELECT * FROM no_such_table") == NULL,
       "an unknown table: prepare gives NULL");
    is_int(count_id(s, "max"), 1, "the connection works after the failures");

    st = s->drv->prepare(s, "SELECT id, n FROM t ORDER BY id");
    ok(st != NULL, "prepare a multi-row select");
    if (st) {
        while (st->drv->step(st, &row) == 0 && row)
            n++;
        is_int(n, 4, "four rows, then the end");
        st->drv->done(st);
    }
}

/* Transactions: rollback leaves nothing, commit keeps; a read transaction reads. */
static void check_tx(struct store *s)
{
    is_int(s->drv->begin(s, DB_TX_WRITE), 0, "begin a write");
    is_int(insert_id(s, "tx-rolled", 1), 0, "insert in it");
    is_int(count_id(s, "tx-rolled"), 1, "the transaction sees its row");
    is_int(s->drv->rollback(s), 0, "rollback");
    is_int(count_id(s, "tx-rolled"), 0, "rollback left no row");

    is_int(s->drv->begin(s, DB_TX_WRITE), 0, "begin a write again");
    is_int(insert_id(s, "tx-kept", 2), 0, "insert in it");
    is_int(s->drv->commit(s), 0, "commit");
    is_int(count_id(s, "tx-kept"), 1, "commit kept the row");

    is_int(s->drv->begin(s, DB_TX_READ), 0, "begin a read");
    is_int(count_id(s, "tx-kept"), 1, "read in it");
    is_int(s->drv->commit(s), 0, "commit the read");
}

/* The statement cache, RETURNING, and ON CONFLICT DO NOTHING. */
static void check_cache_returning(struct store *s)
{
    const char *sql = "SELECT n FROM t WHERE id = $1";
    struct db_stmt *st, *again;
    bool row = false;
    size_t len;

    st = s->drv->prepare(s, sql);
    ok(st != NULL, "prepare");
    if (!st)
        return;
    st->drv->bind_text(st, 1, "tx-kept", (size_t)-1);
    ok(st->drv->step(st, &row) == 0 && row && st->drv->col_int64(st, 0) == 2, "first use");
    st->drv->done(st);
    again = s->drv->prepare(s, sql);
    ok(again == st, "the same text gives the cached statement");
    if (!again)
        return;
    again->drv->bind_text(again, 1, "tx-kept", (size_t)-1);
    ok(again->drv->step(again, &row) == 0 && row && again->drv->col_int64(again, 0) == 2,
       "second use");
    again->drv->done(again);

    st = s->drv->prepare(s, "INSERT INTO t (id, n, b) VALUES ($1, $2, $3) RETURNING n * 2, id, b");
    ok(st != NULL, "prepare an insert with RETURNING");
    if (st) {
        st->drv->bind_text(st, 1, "ret", (size_t)-1);
        st->drv->bind_int64(st, 2, 21);
        st->drv->bind_blob(st, 3, "", 0);
        ok(st->drv->step(st, &row) == 0 && row, "RETURNING gives a row");
        if (row) {
            is_int(st->drv->col_int64(st, 0), 42, "a computed value");
            is_str(st->drv->col_text(st, 1, NULL), "ret", "the key");
            st->drv->col_blob(st, 2, &len);
            ok(!st->drv->is_null(st, 2) && len == 0, "an empty blob is empty, not null");
        }
        ok(st->drv->step(st, &row) == 0 && !row, "then the end");
        is_int(st->drv->changes(st), 1, "one row inserted");
        st->drv->done(st);
    }

    st = s->drv->prepare(s, "INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING");
    ok(st != NULL, "prepare an insert ON CONFLICT DO NOTHING");
    if (st) {
        st->drv->bind_text(st, 1, "ret", (size_t)-1);
        st->drv->bind_int64(st, 2, 1);
        ok(st->drv->step(st, &row) == 0 && !row, "the existing key is no error");
        is_int(st->drv->changes(st), 0, "and no change");
        st->drv->done(st);
    }
    is_int(count_id(s, "ret"), 1, "the first row stays");
}

/* PostgreSQL only: a connection the server ended is reset by the next prepare(). */
static void check_reconnect(struct store *s)
{
    int rc = run_sql(s, "SELECT pg_terminate_backend(pg_backend_pid())");
    ok(rc == ERR_STORE, "a statement on an ended connection fails");
    is_int(run_sql(s, "SELECT 1"), 0, "the next prepare reconnects");
    is_int(s->ops->ping(s), 0, "ping");
}

/* Every check on 's', of backend 'name'. */
static void check_all(const char *name, struct store *s)
{
    static char title[64];
    struct {
        const char *what;
        void (*fn)(struct store *s);
    } const parts[] = {
        {"insert", check_insert},
        {"read", check_read},
        {"changes", check_changes},
        {"transactions", check_tx},
        {"cache and returning", check_cache_returning},
    };

    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        snprintf(title, sizeof(title), "%s: %s", name, parts[i].what);
        subtest(title)
        {
            parts[i].fn(s);
        }
    }
}

/* store_pg_open() failing: a clean error that never quotes the password. */
static void check_open_fails(void)
{
    struct store *s = NULL;
    struct err e;
    int rc;

    err_clear(&e);
    rc = store_pg_open("postgres://workforce:s3cret-pw@127.0.0.1:1/none?connect_timeout=2", &s, &e);
    ok(rc == ERR_STORE && !s, "no server there: ERR_STORE");
    ok(e.code && strcmp(e.code, "service_unavailable") == 0 &&
           strcmp(e.param, "WORKFORCE_DATABASE") == 0 && strstr(e.msg, "cannot connect") &&
           !strstr(e.msg, "s3cret"),
       "service_unavailable, WORKFORCE_DATABASE, and no password");
    err_clear(&e);
    rc = store_pg_open("postgres://workforce:s3%zz@127.0.0.1/none", &s, &e);
    ok(rc == ERR_STORE && !s && !strstr(e.msg, "%zz"), "a malformed URL: its password not quoted");
    printf("#   %s\n", e.msg);
}

/* The checks on SQLite, then on PostgreSQL when WORKFORCE_TEST_PG_URL names one. */
int main(void)
{
    const char *url = getenv("WORKFORCE_TEST_PG_URL");
    struct store *s = NULL;
    struct err e;

    /* A line at a time: the drivers log failures on stderr, often into the same file. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    err_clear(&e);
    ok(store_sqlite_open(":memory:", &s, &e) == 0 && s->drv, "open SQLite :memory:");
    if (s && s->drv) {
        is_str(s->drv->name, "sqlite", "the SQLite driver");
        check_all("sqlite", s);
    }
    store_close(s);
    s = NULL;

    subtest("postgres: open fails")
    {
        check_open_fails();
    }
    if (!url || !*url) {
        skip("postgres", "WORKFORCE_TEST_PG_URL is not set (tests/pg/pg.sh start DIR)");
        return done_testing();
    }
    err_clear(&e);
    ok(store_pg_open(url, &s, &e) == 0, "open PostgreSQL");
    if (!s) {
        printf("#   %s\n", e.msg);
        return done_testing();
    }
    is_str(s->ops->name, "postgres", "the PostgreSQL backend");
    is_int(s->ops->ping(s), 0, "ping");
    is_str(s->drv->name, "postgres", "the PostgreSQL driver");
    check_all("postgres", s);
    subtest("postgres: reconnect")
    {
        check_reconnect(s);
    }
    store_close(s);

    return done_testing();
}
