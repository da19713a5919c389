/* SPDX-License-Identifier: MIT */
/*
 * sqlite.c: the embedded backend. One connection per handle, WAL journal, synchronous=FULL so
 * an acknowledged write survives power loss. Prepared statements are cached per connection by
 * slot.
 *
 * Waiting for the write lock: SQLite has one writer, and its default busy handler sleeps
 * between tries (up to 100 ms), so a thread that waits can lose the lock again and again to
 * threads that write in a loop (the task workers) and give up. Here every commit of this
 * process (the WAL hook) wakes the threads that wait, which then try at once; other
 * processes (the CLI) are noticed by a try every BUSY_POLL_MS. A wait ends after BUSY_MS.
 *
 * The migrations are the files of sql/, embedded at build time (tools/embed.py) as
 * store_sqlite_migrations[]; version N is element N-1.
 */
#include "store_int.h"

#include "../core/clock.h"
#include "../core/log.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char *const store_sqlite_migrations[];
extern const size_t store_sqlite_migrations_count;

enum slot {
    Q_BEGIN,
    Q_BEGIN_IMMEDIATE,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_DATA_VERSION,
    Q_SAVEPOINT,
    Q_ROLLBACK_TO,
    Q_RELEASE,
    Q_SYNC_NORMAL,
    Q_SYNC_FULL,
    Q_COUNT
};

struct group;

struct sqlite_store {
    struct store base;
    sqlite3 *db;
    struct group *group; /* what the connections of this database file share */
    bool checkpoints;    /* this connection checkpoints for the others (s_own_checkpoints) */
    sqlite3_stmt *stmts[Q_COUNT];
    struct text_stmt *texts; /* statements prepared once, by SQL text (cached()) */
    size_t ntexts;
    int64_t busy_since_us; /* when the current wait for the lock began */
};

#define BUSY_MS 10000      /* the longest wait for the write lock */
#define BUSY_POLL_MS 5     /* a try this often, for commits of other processes */
#define CHECKPOINT_AT 1000 /* WAL frames, as SQLite's own auto-checkpoint */

static pthread_mutex_t commit_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t commit_cv = PTHREAD_COND_INITIALIZER;
static uint64_t commit_seq;

static bool checkpoint_here(struct sqlite_store *ss, int frames);

/* After every commit of this process: checkpoint as SQLite would (unless the committer does it,
 * see checkpoint_here()), and wake the waiters. */
static int on_wal_commit(void *ud, sqlite3 *db, const char *name, int frames)
{
    if (checkpoint_here(ud, frames))
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    store_note_commit();
    pthread_mutex_lock(&commit_mu);
    commit_seq++;
    pthread_cond_broadcast(&commit_cv);
    pthread_mutex_unlock(&commit_mu);
    return SQLITE_OK;
}

/* The lock is taken: wait for a commit (or BUSY_POLL_MS) and try again, for up to BUSY_MS. */
static int on_busy(void *ud, int count)
{
    struct sqlite_store *ss = ud;
    struct timespec until;
    int64_t now = clock_mono_us();
    uint64_t seen;

    if (count == 0)
        ss->busy_since_us = now;
    if (now - ss->busy_since_us > (int64_t)BUSY_MS * 1000)
        return 0;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += BUSY_POLL_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&commit_mu);
    seen = commit_seq;
    while (commit_seq == seen)
        if (pthread_cond_timedwait(&commit_cv, &commit_mu, &until) != 0)
            break;
    pthread_mutex_unlock(&commit_mu);
    return 1;
}

#define DB(s) (((struct sqlite_store *)(s))->db)

static const char *const sql_text[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN",
    [Q_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_DATA_VERSION] = "PRAGMA data_version",
    [Q_SAVEPOINT] = "SAVEPOINT job",
    [Q_ROLLBACK_TO] = "ROLLBACK TO job",
    [Q_RELEASE] = "RELEASE job",
    [Q_SYNC_NORMAL] = "PRAGMA synchronous = NORMAL",
    [Q_SYNC_FULL] = "PRAGMA synchronous = FULL",
};

static int fail(struct store *s, const char *what)
{
    log_error("store: %s: %s", what, sqlite3_errmsg(DB(s)));
    return ERR_STORE;
}

/* The cached statement of 'slot', reset and with no bindings. NULL on failure (logged). */
static sqlite3_stmt *stmt(struct store *s, enum slot slot)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    if (!ss->stmts[slot]) {
        if (sqlite3_prepare_v3(ss->db, sql_text[slot], -1, SQLITE_PREPARE_PERSISTENT,
                               &ss->stmts[slot], NULL) != SQLITE_OK) {
            fail(s, sql_text[slot]);
            return NULL;
        }
    } else {
        sqlite3_reset(ss->stmts[slot]);
        sqlite3_clear_bindings(ss->stmts[slot]);
    }
    return ss->stmts[slot];
}

/* The transaction statements, prepared once per connection: compiling them on every call
 * cost 4.5 µs of a list request (docs/performance.md). */
static const enum slot tx_slots[] = {Q_BEGIN,    Q_BEGIN_IMMEDIATE, Q_COMMIT,
                                     Q_ROLLBACK, Q_SAVEPOINT,       Q_ROLLBACK_TO,
                                     Q_RELEASE,  Q_SYNC_NORMAL,     Q_SYNC_FULL};

/*
 * The statement of 'sql', prepared once per connection and kept by its text, reset and with no
 * bindings; NULL on failure (logged). Give it back with the driver's done() before the same
 * text is used again. 'owned' is true only when the table is half full (never expected: the
 * texts are literals of the store's files, about 150): the statement was compiled for this use
 * alone. Compiling the chat path's statements on every call was 18% of
 * its CPU (docs/performance.md). The text may use PostgreSQL's $1 .. $n (driver.h): they are
 * read as ?1 .. ?n.
 */
struct sq_stmt {
    struct db_stmt base;
    sqlite3_stmt *st;
    bool owned;
};

struct text_stmt {
    uint64_t hash;
    char *sql;
    struct sq_stmt q;
};

#define TEXT_STMTS 512 /* open addressing, at most half full */

static const struct db_driver sqlite_driver;

/* 'sql' with each $N outside quotes written ?N; the caller frees it. */
static char *numbered(const char *sql)
{
    char *out = xstrdup(sql);
    char quote = 0;
    for (char *p = out; *p; p++) {
        if (quote) {
            if (*p == quote)
                quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (*p == '$' && p[1] >= '0' && p[1] <= '9') {
            *p = '?';
        }
    }
    return out;
}

static sqlite3_stmt *compile(struct store *s, const char *sql, bool persistent)
{
    sqlite3_stmt *st = NULL;
    char *text = strchr(sql, '$') ? numbered(sql) : NULL;
    if (sqlite3_prepare_v3(DB(s), text ? text : sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0,
                           &st, NULL) != SQLITE_OK) {
        fail(s, sql);
        sqlite3_finalize(st);
        st = NULL;
    }
    free(text);
    return st;
}

static struct sq_stmt *lookup(struct store *s, const char *sql)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    uint64_t h = 0xcbf29ce484222325ULL;
    sqlite3_stmt *st;
    size_t i;

    for (const unsigned char *p = (const unsigned char *)sql; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    if (!ss->texts)
        ss->texts = xcalloc(TEXT_STMTS, sizeof(*ss->texts));
    for (i = h % TEXT_STMTS; ss->texts[i].sql; i = (i + 1) % TEXT_STMTS) {
        struct text_stmt *ts = &ss->texts[i];
        if (ts->hash == h && strcmp(ts->sql, sql) == 0) {
            sqlite3_clear_bindings(ts->q.st);
            return &ts->q;
        }
    }
    if (ss->ntexts >= TEXT_STMTS / 2) {
        struct sq_stmt *q;
        st = compile(s, sql, false);
        if (!st)
            return NULL;
        q = xcalloc(1, sizeof(*q));
        *q = (struct sq_stmt){{&sqlite_driver, NULL, false}, st, true};
        return q;
    }
    st = compile(s, sql, true);
    if (!st)
        return NULL;
    ss->texts[i] = (struct text_stmt){h, xstrdup(sql), {{&sqlite_driver, NULL, false}, st, false}};
    ss->ntexts++;
    return &ss->texts[i].q;
}

/* Tests (store.c, fault injection): whether the statement of 'slot' fails here without running.
 * Those that do work can (begin, commit, savepoint); the ways out of a transaction and the
 * settings never do. */
static bool faulted(enum slot slot)
{
    return (slot == Q_BEGIN || slot == Q_BEGIN_IMMEDIATE || slot == Q_COMMIT ||
            slot == Q_SAVEPOINT) &&
           store_fault();
}

static int exec(struct store *s, const char *sql)
{
    char *msg = NULL;
    for (size_t i = 0; i < sizeof(tx_slots) / sizeof(tx_slots[0]); i++) {
        enum slot slot = tx_slots[i];
        sqlite3_stmt *st;
        int rc;
        if (strcmp(sql, sql_text[slot]) != 0)
            continue;
        if (faulted(slot))
            return ERR_STORE;
        /* A test build's broken rollback (store_int.h): what it should undo stays. */
        if (STORE_BROKEN_ROLLBACK && slot == Q_ROLLBACK_TO)
            return 0;
        if (STORE_BROKEN_ROLLBACK && slot == Q_ROLLBACK)
            slot = Q_COMMIT;
        st = stmt(s, slot);
        if (!st)
            return ERR_STORE;
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
            fail(s, sql);
            sqlite3_reset(st);
            return ERR_STORE;
        }
        sqlite3_reset(st);
        return 0;
    }
    if (sqlite3_exec(DB(s), sql, NULL, NULL, &msg) != SQLITE_OK) {
        log_error("store: %s: %s", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return ERR_STORE;
    }
    return 0;
}

/* ---- Group commit ----
 *
 * DESIGN: a durable commit costs one fsync of the WAL, and SQLite has one writer, so N clients
 * whose replies finish together used to wait for N fsyncs in a row (8 concurrent blocking
 * chats: 3.6 ms each over the model call). Writes that must be durable are jobs of the
 * committer (store.c), which runs the jobs waiting in one transaction here (group_run: each in a
 * savepoint, so a job that fails is rolled back alone), commits once without a flush under the
 * write lock, then flushes the log (sync_wal) before any durable job is told.
 *
 * The connections of one database file in this process share a struct group (found by the
 * file's name at open; a private ":memory:" database has one of its own): it holds the log's
 * length and whether a committer does the checkpoints.
 */
struct group {
    char *path; /* NULL: private, not in the list */
    int refs;
    _Atomic int wal_frames; /* frames in the log after the last commit of this process */
    _Atomic int committers; /* connections that checkpoint off the request path */
    struct group *next;
};

static pthread_mutex_t groups_mu = PTHREAD_MUTEX_INITIALIZER;
static struct group *groups;

/* The group of the database file 'path' ("" for a private database), with one more user. */
static struct group *group_take(const char *path)
{
    struct group *g;
    pthread_mutex_lock(&groups_mu);
    for (g = groups; g && *path; g = g->next) {
        if (g->path && strcmp(g->path, path) == 0)
            break;
    }
    if (!g || !*path) {
        g = xcalloc(1, sizeof(*g));
        if (*path) {
            g->path = xstrdup(path);
            g->next = groups;
            groups = g;
        }
    }
    g->refs++;
    pthread_mutex_unlock(&groups_mu);
    return g;
}

/* One user fewer; the last one frees it. */
static void group_drop(struct group *g)
{
    bool last;
    if (!g)
        return;
    pthread_mutex_lock(&groups_mu);
    last = --g->refs == 0;
    if (last && g->path) {
        struct group **pp = &groups;
        while (*pp != g)
            pp = &(*pp)->next;
        *pp = g->next;
    }
    pthread_mutex_unlock(&groups_mu);
    if (!last)
        return;
    free(g->path);
    free(g);
}

/*
 * Make what this connection committed durable: fdatasync the write-ahead log, as a commit with
 * synchronous=FULL would have done before it returned, but after the write lock is released, so
 * that other writers go on during the fsync. A commit that cannot be made durable cannot be
 * acknowledged, nor taken back (other connections may have read it): as PostgreSQL does on a
 * failed fsync, the process stops, and the next start recovers from the log.
 */
static void sync_wal(struct store *s)
{
    sqlite3_file *f = NULL;
    const char *file = sqlite3_db_filename(DB(s), "main");
    if (!file || !*file)
        return; /* a private in-memory database has no log to sync */
    if (sqlite3_file_control(DB(s), "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) != SQLITE_OK || !f ||
        !f->pMethods)
        return; /* no log open on this connection: it has written nothing to flush */
    if (f->pMethods->xSync(f, SQLITE_SYNC_NORMAL) != SQLITE_OK) {
        log_error("store: cannot sync the write-ahead log; stopping to keep acknowledged writes "
                  "honest");
        abort();
    }
}

/*
 * Checkpoints (the log copied back into the database file, and an fsync of each: 2 to 4 ms) ran
 * in the thread whose commit made the log long, often a request's. When a committer serves the
 * database, it checkpoints after it has answered its jobs (s_maintain), and the other
 * connections checkpoint only as a backstop, when the log is 4 times as long. The group keeps
 * the log's length as the last commit of this process left it.
 */
#define CHECKPOINT_BACKSTOP (4 * CHECKPOINT_AT)

static bool checkpoint_here(struct sqlite_store *ss, int frames)
{
    struct group *g = ss ? ss->group : NULL;
    if (g)
        atomic_store(&g->wal_frames, frames);
    if (frames < CHECKPOINT_AT || (ss && ss->checkpoints))
        return false;
    return !g || atomic_load(&g->committers) == 0 || frames >= CHECKPOINT_BACKSTOP;
}

/* This connection checkpoints for the others of its database (a committer's). */
static void s_own_checkpoints(struct store *s)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    if (ss->checkpoints || !ss->group)
        return;
    ss->checkpoints = true;
    atomic_fetch_add(&ss->group->committers, 1);
}

/* Off the request path: a checkpoint when the log is long; with jobs waiting, only when it is
 * twice as long (a stream of jobs must not let it grow without end). */
static void s_maintain(struct store *s, bool idle)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    if (ss->group &&
        atomic_load(&ss->group->wal_frames) >= (idle ? CHECKPOINT_AT : 2 * CHECKPOINT_AT)) {
        atomic_store(&ss->group->wal_frames, 0);
        sqlite3_wal_checkpoint_v2(ss->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
}

/* Run the jobs of 'batch' in one transaction on 's' and commit it; each job's rc is set. The
 * commit itself is made with synchronous=NORMAL (no fsync under the write lock); sync_wal()
 * (s_group_sync) then makes it durable before any job that needs it is told. */
static void group_run(struct store *s, struct store_job *batch)
{
    int rc = exec(s, "PRAGMA synchronous = NORMAL");
    if (!rc)
        rc = exec(s, "BEGIN IMMEDIATE");
    for (struct store_job *j = batch; j; j = j->next) {
        if (rc) {
            j->rc = rc;
            continue;
        }
        j->rc = exec(s, "SAVEPOINT job");
        if (!j->rc)
            j->rc = j->apply(s, j);
        if (j->rc)
            exec(s, "ROLLBACK TO job");
        if (exec(s, "RELEASE job") && !j->rc)
            j->rc = ERR_STORE;
    }
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc) {
        exec(s, "ROLLBACK");
        for (struct store_job *j = batch; j; j = j->next) {
            if (!j->rc)
                j->rc = rc;
        }
    }
    exec(s, "PRAGMA synchronous = FULL");
}

/* After group_run(): make the commit durable (store_group_sync()). */
static void s_group_sync(struct store *s)
{
    sync_wal(s);
}

/* ---- Lifecycle ---- */

static void s_close(struct store *s)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(ss->stmts[i]);
    for (size_t i = 0; ss->texts && i < TEXT_STMTS; i++) {
        sqlite3_finalize(ss->texts[i].q.st);
        free(ss->texts[i].sql);
    }
    free(ss->texts);
    sqlite3_close(ss->db);
    if (ss->checkpoints)
        atomic_fetch_sub(&ss->group->committers, 1);
    group_drop(ss->group);
    free(ss);
}

/* The table of applied versions; its text is part of every schema (check_schema()). */
#define MIGRATIONS_TABLE                                                                           \
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"                   \
    " applied_at INTEGER NOT NULL)"

static int s_migrate(struct store *s, struct err *e)
{
    sqlite3_stmt *st = NULL;
    int64_t have = 0;
    int rc;

    rc = exec(s, MIGRATIONS_TABLE);
    if (rc)
        goto out;
    rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        goto out;
    if (sqlite3_prepare_v2(DB(s), "SELECT coalesce(max(version), 0) FROM schema_migrations", -1,
                           &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        rc = fail(s, "read schema version");
        goto rollback;
    }
    have = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (have > (int64_t)store_sqlite_migrations_count) {
        rc = err_set(e, ERR_STORE, "invalid_setting", "WORKFORCE_DATABASE",
                     "the database schema (version %lld) is newer than this build (%zu)",
                     (long long)have, store_sqlite_migrations_count);
        goto rollback;
    }
    for (size_t v = (size_t)have + 1; v <= store_sqlite_migrations_count; v++) {
        char ins[128];
        rc = exec(s, store_sqlite_migrations[v - 1]);
        if (rc)
            goto rollback;
        snprintf(ins, sizeof(ins), "INSERT INTO schema_migrations VALUES (%zu, %lld)", v,
                 (long long)clock_now_ms());
        rc = exec(s, ins);
        if (rc)
            goto rollback;
        log_info("store: migrated to schema version %zu", v);
    }
    rc = exec(s, "COMMIT");
    goto out;
rollback:
    exec(s, "ROLLBACK");
out:
    if (rc && e && !e->code)
        err_set(e, ERR_STORE, "internal_error", NULL, "the database could not be migrated");
    return rc;
}

static int s_backup(struct store *s, const char *to)
{
    sqlite3_stmt *st = NULL;
    int rc;
    /* VACUUM INTO reads one snapshot of the database (a read transaction: writers go on) and
     * writes a compact copy; the file is created with the process's umask (077: 0600). */
    if (sqlite3_prepare_v2(DB(s), "VACUUM INTO ?1", -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare backup");
    sqlite3_bind_text(st, 1, to, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : fail(s, "backup");
    sqlite3_finalize(st);
    return rc;
}

/* ---- Checking a database file (backup, restore) ---- */

/* The first value of the one-row query 'sql' on 'db' into '*out'; 0 or -1. */
static int query_one(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* 'in' (NULL: "") cut to fit 'out' ('n' bytes), each byte that is not printable ASCII as '?':
 * a name read from a file that may be hostile is printed on a terminal. */
static void printable(const unsigned char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in && in[i] && i + 1 < n; i++)
        out[i] = in[i] >= 0x20 && in[i] < 0x7f ? (char)in[i] : '?';
    out[i] = '\0';
}

/* Open the file 'path' read-only as an untrusted database (SQLite's advice for files from
 * elsewhere: defensive mode, no functions with side effects run from its schema, cell sizes
 * checked, no memory map). 0, or -1 with '*out' still to be closed. */
static int open_untrusted(const char *path, sqlite3 **out)
{
    if (sqlite3_open_v2(path, out, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    sqlite3_db_config(*out, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(*out, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    return sqlite3_exec(*out, "PRAGMA cell_size_check = ON; PRAGMA mmap_size = 0", NULL, NULL,
                        NULL) == SQLITE_OK
               ? 0
               : -1;
}

/* Copy the schema rows of 'from' (type, name, tbl_name, sql) into the temporary table 'theirs'
 * of 'to'. 0 or -1. */
static int copy_schema(sqlite3 *from, sqlite3 *to)
{
    sqlite3_stmt *rd = NULL, *wr = NULL;
    int rc = -1, step;

    if (sqlite3_exec(to, "CREATE TEMP TABLE theirs (type TEXT, name TEXT, tbl_name TEXT, sql TEXT)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(from, "SELECT type, name, tbl_name, sql FROM sqlite_master", -1, &rd,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(to, "INSERT INTO temp.theirs VALUES (?1, ?2, ?3, ?4)", -1, &wr, NULL) !=
            SQLITE_OK)
        goto out;
    while ((step = sqlite3_step(rd)) == SQLITE_ROW) {
        for (int i = 0; i < 4; i++)
            sqlite3_bind_value(wr, i + 1, sqlite3_column_value(rd, i));
        if (sqlite3_step(wr) != SQLITE_DONE)
            goto out;
        sqlite3_reset(wr);
    }
    rc = step == SQLITE_DONE ? 0 : -1;
out:
    sqlite3_finalize(rd);
    sqlite3_finalize(wr);
    return rc;
}

/*
 * The schema of the open database 'db' must be exactly the one a database migrated from empty
 * to 'version' holds: the same tables, indexes, triggers and views, each with the same
 * definition (sqlite_master, compared row by row with a reference made in memory now). A
 * table, trigger or view more (a trigger that changes balances), or one less (no api_keys), is
 * refused with ERR_INVALID naming it in 'e'.
 */
static int check_schema(sqlite3 *db, int64_t version, struct err *e)
{
    /* each: a verdict, and the query that finds the first object it applies to */
    static const struct {
        const char *what;
        const char *sql;
    } diffs[] = {
        {"is not part of it",
         "SELECT t.type, t.name FROM temp.theirs t WHERE t.name NOT IN (SELECT name FROM"
         " main.sqlite_master) ORDER BY t.type != 'table', t.type, t.name LIMIT 1"},
        {"is missing",
         "SELECT m.type, m.name FROM main.sqlite_master m WHERE m.name NOT IN (SELECT name FROM"
         " temp.theirs) ORDER BY m.type != 'table', m.type, m.name LIMIT 1"},
        {"has another definition",
         "SELECT t.type, t.name FROM temp.theirs t JOIN main.sqlite_master m ON m.name = t.name"
         " WHERE t.type IS NOT m.type OR t.tbl_name IS NOT m.tbl_name OR t.sql IS NOT m.sql"
         " ORDER BY t.type, t.name LIMIT 1"},
    };
    sqlite3 *ref = NULL;
    sqlite3_stmt *st = NULL;
    int rc = 0;

    if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(ref, MIGRATIONS_TABLE, NULL, NULL, NULL) != SQLITE_OK) {
        rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "cannot make the reference schema");
        goto out;
    }
    for (int64_t v = 1; v <= version; v++) {
        if (sqlite3_exec(ref, store_sqlite_migrations[v - 1], NULL, NULL, NULL) != SQLITE_OK) {
            rc = err_set(e, ERR_INTERNAL, "internal_error", NULL,
                         "cannot make the reference schema of version %lld", (long long)v);
            goto out;
        }
    }
    if (copy_schema(db, ref) != 0) {
        rc = err_set(e, ERR_INVALID, "invalid_request", NULL, "its schema cannot be read");
        goto out;
    }
    for (size_t i = 0; !rc && i < sizeof(diffs) / sizeof(diffs[0]); i++) {
        if (sqlite3_prepare_v2(ref, diffs[i].sql, -1, &st, NULL) != SQLITE_OK) {
            rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "cannot compare the schema");
            break;
        }
        if (sqlite3_step(st) == SQLITE_ROW) {
            char type[16], name[81];
            printable(sqlite3_column_text(st, 0), type, sizeof(type));
            printable(sqlite3_column_text(st, 1), name, sizeof(name));
            rc = err_set(e, ERR_INVALID, "invalid_request", NULL,
                         "its schema is not the one of version %lld: %s %s %s", (long long)version,
                         type, name, diffs[i].what);
        }
        sqlite3_finalize(st);
        st = NULL;
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(ref);
    return rc;
}

/*
 * The schema version of the open database 'db' into '*version': its schema_migrations table
 * must hold each version from 1 to the highest, once (rows deleted from it would have the
 * migrations run again over tables that exist). When the version is one this build knows, the
 * whole schema must be that version's (check_schema()); a newer one is left to the caller.
 * 0, or ERR_INVALID with 'e' set.
 */
static int check_versions(sqlite3 *db, int64_t *version, struct err *e)
{
    int64_t rows = 0, lowest = 0;

    *version = 0;
    if (query_one(db, "SELECT coalesce(max(version), 0) FROM schema_migrations", version) ||
        query_one(db, "SELECT count(*) FROM schema_migrations", &rows) ||
        query_one(db, "SELECT coalesce(min(version), 0) FROM schema_migrations", &lowest))
        return err_set(e, ERR_INVALID, "invalid_request", NULL, "it is not a Workforce database");
    if (*version < 1 || rows != *version || lowest != 1)
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "its schema_migrations table is damaged (%lld rows, versions %lld to "
                       "%lld; each version from 1 must be there once)",
                       (long long)rows, (long long)lowest, (long long)*version);
    if (*version <= (int64_t)store_sqlite_migrations_count)
        return check_schema(db, *version, e);
    return 0;
}

/*
 * Check the SQLite file 'path' without changing it: it opens read-only (as an untrusted file),
 * passes PRAGMA integrity_check, and its schema is Workforce's (check_versions()). '*version'
 * gets its schema version and 'counts' the rows of a few tables (organizations, conversations,
 * messages, documents, tasks). ERR_INVALID with 'e' set when it is not a sound database.
 */
int store_sqlite_check_file(const char *path, int64_t *version, int64_t counts[5], struct err *e)
{
    static const char *const tables[5] = {"orgs", "conversations", "messages", "documents",
                                          "tasks"};
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    char sql[96];

    *version = 0;
    if (open_untrusted(path, &db) != 0) {
        rc = err_set(e, ERR_INVALID, "invalid_request", NULL, "cannot open it as a database");
        goto out;
    }
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW ||
        strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
        rc = err_set(e, ERR_INVALID, "invalid_request", NULL,
                     "it is not a database, or it is damaged (integrity check failed)");
        goto out;
    }
    rc = check_versions(db, version, e);
    if (rc)
        goto out;
    for (int i = 0; i < 5; i++) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
        if (query_one(db, sql, &counts[i]) != 0)
            counts[i] = -1;
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/*
 * Check the schema of the SQLite file 'path' read-only, as store_sqlite_check_file() does but
 * without its integrity check and counts (a file checked whole before, then migrated here).
 */
int store_sqlite_check_schema(const char *path, int64_t *version, struct err *e)
{
    sqlite3 *db = NULL;
    int rc = open_untrusted(path, &db) != 0
                 ? err_set(e, ERR_INVALID, "invalid_request", NULL, "cannot open it as a database")
                 : check_versions(db, version, e);
    sqlite3_close(db);
    return rc;
}

/* The schema version this build migrates to. */
int64_t store_sqlite_schema_version(void)
{
    return (int64_t)store_sqlite_migrations_count;
}

static int s_ping(struct store *s)
{
    return exec(s, "SELECT 1");
}

/* At start nothing is in flight: no employee works, no Idempotency-Key request runs. */
/* SQLite's count of commits made by other connections, this process's and others'. */
static int s_data_version(struct store *s, int64_t *out)
{
    sqlite3_stmt *st = stmt(s, Q_DATA_VERSION);
    if (!st)
        return ERR_STORE;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        return fail(s, "data version");
    }
    *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return 0;
}

/* ---- Chat (the rest is chat.c) ---- */

/*
 * The user message is committed without its own fsync (synchronous=NORMAL for this one
 * transaction): nothing has been acknowledged to the client yet, and the reply's commit, which
 * is synced (FULL), flushes the whole WAL file, this transaction's frames included, before
 * the client is answered. A process crash keeps it either way (the OS holds the pages); only
 * a power loss before the reply could drop an unanswered message. That halves the fsyncs of a
 * chat call.
 */
static int s_chat_begin(struct store *s, const struct store_tenant *t,
                        const struct store_chat_begin *in)
{
    int rc = exec(s, "PRAGMA synchronous = NORMAL");
    if (!rc)
        rc = exec(s, "BEGIN IMMEDIATE");
    if (rc) {
        exec(s, "PRAGMA synchronous = FULL");
        return rc;
    }
    rc = chat_begin_in(s, t, in);
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    exec(s, "PRAGMA synchronous = FULL");
    return rc;
}

/* ---- Knowledge ---- */

/* Documents, chunks, vectors and the searches: written once over the driver (knowledge.c). */

/* ---- Tasks ---- */

/* Tasks, their runs and the durable queue: written once over the driver (tasks.c). */

/* ---- Workflows ---- */

/* Written once over the driver (workflows.c). */

/* ---- Integrations ---- */

/* Connections, OAuth states, events tokens, deliveries and the workflows of an event: written
 * once over the driver (integrations.c). */

/* ---- The driver (driver.h) ---- */

#define SQ(st) ((struct sq_stmt *)(st))

static struct db_stmt *d_prepare(struct store *s, const char *sql)
{
    struct sq_stmt *q = store_fault() ? NULL : lookup(s, sql);
    return q ? &q->base : NULL;
}

static void d_bind_null(struct db_stmt *st, int i)
{
    sqlite3_bind_null(SQ(st)->st, i);
}

static void d_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    sqlite3_bind_int64(SQ(st)->st, i, v);
}

static void d_bind_double(struct db_stmt *st, int i, double v)
{
    sqlite3_bind_double(SQ(st)->st, i, v);
}

static void d_bind_text(struct db_stmt *st, int i, const char *v, size_t len)
{
    if (!v)
        sqlite3_bind_null(SQ(st)->st, i);
    else
        sqlite3_bind_text(SQ(st)->st, i, v, len == (size_t)-1 ? -1 : (int)len, SQLITE_STATIC);
}

static void d_bind_blob(struct db_stmt *st, int i, const void *v, size_t len)
{
    if (!v)
        sqlite3_bind_null(SQ(st)->st, i);
    else
        sqlite3_bind_blob(SQ(st)->st, i, v, (int)len, SQLITE_STATIC);
}

static int d_step(struct db_stmt *st, bool *row)
{
    sqlite3_stmt *q = SQ(st)->st;
    int rc;
    *row = false;
    if (store_fault())
        return ERR_STORE; /* a test's (store.c) */
    rc = sqlite3_step(q);
    *row = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        return 0;
    switch (sqlite3_extended_errcode(sqlite3_db_handle(q))) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_CHECK:
        return ERR_CONFLICT;
    default:
        log_error("store: %s: %s", sqlite3_sql(q), sqlite3_errmsg(sqlite3_db_handle(q)));
        return ERR_STORE;
    }
}

static bool d_is_null(struct db_stmt *st, int col)
{
    return sqlite3_column_type(SQ(st)->st, col) == SQLITE_NULL;
}

static int64_t d_col_int64(struct db_stmt *st, int col)
{
    return sqlite3_column_int64(SQ(st)->st, col);
}

static double d_col_double(struct db_stmt *st, int col)
{
    return sqlite3_column_double(SQ(st)->st, col);
}

static const char *d_col_text(struct db_stmt *st, int col, size_t *len)
{
    const char *v = (const char *)sqlite3_column_text(SQ(st)->st, col);
    if (len)
        *len = v ? (size_t)sqlite3_column_bytes(SQ(st)->st, col) : 0;
    return v;
}

static const void *d_col_blob(struct db_stmt *st, int col, size_t *len)
{
    const void *v = sqlite3_column_blob(SQ(st)->st, col);
    *len = v ? (size_t)sqlite3_column_bytes(SQ(st)->st, col) : 0;
    return v;
}

static int64_t d_changes(struct db_stmt *st)
{
    return sqlite3_changes64(sqlite3_db_handle(SQ(st)->st));
}

static void d_done(struct db_stmt *st)
{
    struct sq_stmt *q = SQ(st);
    if (q->owned) {
        sqlite3_finalize(q->st);
        free(q);
    } else {
        sqlite3_reset(q->st);
    }
}

static int d_begin(struct store *s, enum db_tx kind)
{
    return exec(s, kind == DB_TX_WRITE ? "BEGIN IMMEDIATE" : "BEGIN");
}

static int d_commit(struct store *s)
{
    int rc = exec(s, "COMMIT");
    /* The WAL hook (on_wal_commit) already told; a database without a log (":memory:") has
     * none, so the events recorded are announced here. */
    if (!rc)
        hook_note_commit();
    return rc;
}

static int d_rollback(struct store *s)
{
    return exec(s, "ROLLBACK");
}

static const struct db_driver sqlite_driver = {
    .name = "sqlite",
    .dialect = DB_SQLITE,
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

static const struct store_ops sqlite_ops = {
    .version = 1,
    .name = "sqlite",
    .close = s_close,
    .migrate = s_migrate,
    .ping = s_ping,
    .data_version = s_data_version,
    .backup = s_backup,
    .chat_begin = s_chat_begin,
    .group_apply = group_run,
    .group_sync = s_group_sync,
    .own_checkpoints = s_own_checkpoints,
    .maintain = s_maintain,
};

static void memstatus_off(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/*
 * Open the SQLite database at 'path' (":memory:" for tests) with WAL, synchronous=FULL,
 * foreign keys and the busy handler above. '*out' is owned by the caller (store_close()).
 */
int store_sqlite_open(const char *path, struct store **out, struct err *e)
{
    struct sqlite_store *ss = xcalloc(1, sizeof(*ss));
    int rc = 0;

    /* SQLite's memory statistics take a process-wide mutex on every allocation (80 times a
     * list request, 451 a detail one: docs/performance.md) and nothing reads them. This must
     * come before SQLite initializes; later calls change nothing (SQLITE_MISUSE, ignored). */
    {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, memstatus_off);
    }
    ss->base.ops = &sqlite_ops;
    ss->base.drv = &sqlite_driver;
    if (sqlite3_open_v2(path, &ss->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        rc = err_set(e, ERR_STORE, "invalid_setting", "WORKFORCE_DATABASE",
                     "cannot open the database %s: %s", path,
                     ss->db ? sqlite3_errmsg(ss->db) : "out of memory");
        goto out;
    }
    sqlite3_busy_handler(ss->db, on_busy, ss);
    rc = exec(&ss->base, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                         " PRAGMA foreign_keys = ON;");
    if (!rc) {
        const char *file = sqlite3_db_filename(ss->db, "main");
        sqlite3_wal_hook(ss->db, on_wal_commit, ss); /* replaces the auto-checkpoint */
        ss->group = group_take(file ? file : "");
    }
    if (rc)
        err_set(e, ERR_STORE, "invalid_setting", "WORKFORCE_DATABASE",
                "cannot configure the database %s", path);
out:
    if (rc) {
        s_close(&ss->base);
        ss = NULL;
    }
    *out = ss ? &ss->base : NULL;
    return rc;
}
