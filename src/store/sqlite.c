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

#include <jansson.h>
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

static const char *const mode_names[] = {"live", "test"};

static enum store_mode mode_from_name(const unsigned char *v)
{
    return v && strcmp((const char *)v, "test") == 0 ? STORE_TEST : STORE_LIVE;
}

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
 * bindings; NULL on failure (logged). Give it back with release(st, *owned) (or the driver's
 * done()) before the same text is used again. '*owned' is true only when the table is half full
 * (never expected: the texts are literals of the store's files, about 150): the statement was
 * compiled for this use alone. Compiling the chat path's statements on every call was 18% of
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
        *q = (struct sq_stmt){{&sqlite_driver}, st, true};
        return q;
    }
    st = compile(s, sql, true);
    if (!st)
        return NULL;
    ss->texts[i] = (struct text_stmt){h, xstrdup(sql), {{&sqlite_driver}, st, false}};
    ss->ntexts++;
    return &ss->texts[i].q;
}

static sqlite3_stmt *cached(struct store *s, const char *sql, bool *owned)
{
    struct sq_stmt *q = lookup(s, sql);
    sqlite3_stmt *st;
    *owned = false;
    if (!q)
        return NULL;
    st = q->st;
    if (q->owned) {
        *owned = true;
        free(q);
    }
    return st;
}

/* Give back a statement of cached(): reset (kept) or finalized (owned). */
static void release(sqlite3_stmt *st, bool owned)
{
    if (owned)
        sqlite3_finalize(st);
    else
        sqlite3_reset(st);
}

static int exec(struct store *s, const char *sql)
{
    char *msg = NULL;
    for (size_t i = 0; i < sizeof(tx_slots) / sizeof(tx_slots[0]); i++) {
        sqlite3_stmt *st;
        int rc;
        if (strcmp(sql, sql_text[tx_slots[i]]) != 0)
            continue;
        st = stmt(s, tx_slots[i]);
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

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_tenant(sqlite3_stmt *st, const struct store_tenant *t)
{
    sqlite3_bind_text(st, 1, t->org_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, mode_names[t->mode], -1, SQLITE_STATIC);
}

static void copy_col(sqlite3_stmt *st, int col, char *dst, size_t n)
{
    const unsigned char *v = sqlite3_column_text(st, col);
    snprintf(dst, n, "%s", v ? (const char *)v : "");
}

static const char *arena_col(struct arena *a, sqlite3_stmt *st, int col)
{
    const unsigned char *v = sqlite3_column_text(st, col);
    if (!v)
        return NULL;
    return arena_strndup(a, (const char *)v, (size_t)sqlite3_column_bytes(st, col));
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

static int s_migrate(struct store *s, struct err *e)
{
    sqlite3_stmt *st = NULL;
    int64_t have = 0;
    int rc;

    rc = exec(s, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                 " applied_at INTEGER NOT NULL)");
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

/*
 * Check the SQLite file 'path' without changing it: it opens read-only, passes
 * PRAGMA integrity_check, and has Workforce's schema_migrations table. '*version' gets its
 * schema version and 'counts' the rows of a few tables (organizations, conversations,
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
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
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
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(max(version), 0) FROM schema_migrations", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        rc = err_set(e, ERR_INVALID, "invalid_request", NULL, "it is not a Workforce database");
        goto out;
    }
    *version = sqlite3_column_int64(st, 0);
    for (int i = 0; i < 5; i++) {
        sqlite3_finalize(st);
        st = NULL;
        counts[i] = -1;
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            counts[i] = sqlite3_column_int64(st, 0);
    }
out:
    sqlite3_finalize(st);
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

static int s_reset_busy(struct store *s)
{
    return exec(s, "UPDATE employees SET busy = 0 WHERE busy != 0;"
                   " DELETE FROM idempotency_keys WHERE state = 0");
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

/*
 * Run 'sql' (parameters ?1 org, ?2 mode, then the 'n' texts) expecting at most one row, read by
 * 'read' into 'out'. ERR_NOT_FOUND when there is none.
 */
static int query_one(struct store *s, const char *sql, const struct store_tenant *t,
                     const char *const *texts, size_t n,
                     void (*read)(sqlite3_stmt *, struct arena *, void *), struct arena *a,
                     void *out)
{
    bool owned;
    sqlite3_stmt *st = cached(s, sql, &owned);
    int rc;
    if (!st)
        return ERR_STORE;
    bind_tenant(st, t);
    for (size_t i = 0; i < n; i++)
        bind_text(st, (int)i + 3, texts[i]);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        read(st, a, out);
    else if (rc != SQLITE_DONE)
        fail(s, sql);
    release(st, owned);
    if (rc == SQLITE_DONE)
        return ERR_NOT_FOUND;
    return rc == SQLITE_ROW ? 0 : ERR_STORE;
}

/* ---- Knowledge ---- */

#define DOC_COLS                                                                                   \
    "d.id, d.name, d.filename, d.content_type, d.sha256, d.tags, d.employee_ids, d.status,"        \
    " d.error, d.size_bytes, d.chunk_count, d.created_at, d.updated_at, d.org_id, d.mode,"         \
    " d.progress_chunks, d.progress_embedded"

/* The access and tag rules of a search or list, with parameters ?10 (tags) and ?11 (reader). */
#define DOC_RULES                                                                                  \
    " AND (?10 IS NULL OR EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value IN"                  \
    " (SELECT value FROM json_each(?10))))"                                                        \
    " AND (?11 IS NULL OR d.employee_ids = '[]' OR EXISTS (SELECT 1 FROM"                          \
    " json_each(d.employee_ids) WHERE value = ?11))"

static void read_document(sqlite3_stmt *st, struct arena *a, void *pout)
{
    struct store_document *out = pout;
    const unsigned char *mode;
    out->id = arena_col(a, st, 0);
    out->name = arena_col(a, st, 1);
    out->filename = arena_col(a, st, 2);
    out->content_type = arena_col(a, st, 3);
    out->sha256 = arena_col(a, st, 4);
    out->tags = arena_col(a, st, 5);
    out->employee_ids = arena_col(a, st, 6);
    out->status = arena_col(a, st, 7);
    out->error = arena_col(a, st, 8);
    out->size_bytes = sqlite3_column_int64(st, 9);
    out->chunk_count = sqlite3_column_int64(st, 10);
    out->created_at = sqlite3_column_int64(st, 11);
    out->updated_at = sqlite3_column_int64(st, 12);
    copy_col(st, 13, out->tenant.org_id, sizeof(out->tenant.org_id));
    mode = sqlite3_column_text(st, 14);
    out->tenant.mode = mode_from_name(mode);
    out->progress_chunks = sqlite3_column_int64(st, 15);
    out->progress_embedded = sqlite3_column_int64(st, 16);
}

static int s_document_progress(struct store *s, const char *id, int64_t chunks, int64_t embedded)
{
    const char *texts[] = {id};
    const int64_t ints[] = {chunks, embedded};
    return db_run(s,
                  "UPDATE documents SET progress_chunks = ?2, progress_embedded = ?3 WHERE id = ?1"
                  " AND status = 'processing'",
                  texts, 1, ints, 2);
}

static int s_document_create(struct store *s, const struct store_tenant *t,
                             const struct store_document *d)
{
    const char *texts[] = {d->id,     t->org_id,   mode_names[t->mode],
                           d->name,   d->filename, d->content_type,
                           d->sha256, d->tags,     d->employee_ids};
    const int64_t ints[] = {d->size_bytes, d->created_at};
    return db_run(s,
                  "INSERT INTO documents (id, org_id, mode, name, filename, content_type, sha256,"
                  " tags, employee_ids, size_bytes, status, chunk_count, created_at, updated_at)"
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'processing', 0, ?11, ?11)",
                  texts, 9, ints, 2);
}

static int s_document_get(struct store *s, const struct store_tenant *t, const char *id,
                          struct arena *a, struct store_document *out)
{
    const char *texts[] = {id};
    return query_one(s,
                     "SELECT " DOC_COLS " FROM documents d WHERE d.org_id = ?1 AND d.mode = ?2"
                     " AND d.id = ?3",
                     t, texts, 1, read_document, a, out);
}

static int s_document_list(struct store *s, const struct store_tenant *t,
                           const struct store_doc_filter *f, struct arena *a,
                           struct store_doc_page *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(
            DB(s),
            "SELECT " DOC_COLS " FROM documents d WHERE d.org_id = ?1 AND"
            " d.mode = ?2 AND (?4 IS NULL OR (d.created_at, d.id) < (?3, ?4))" DOC_RULES
            " ORDER BY d.created_at DESC, d.id DESC LIMIT ?5",
            -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare document list");
    bind_tenant(st, t);
    sqlite3_bind_int64(st, 3, f->before_created);
    bind_text(st, 4, f->before_id);
    sqlite3_bind_int64(st, 5, (int64_t)f->limit + 1);
    if (f->tag) {
        json_t *arr = json_array();
        char *js;
        json_array_append_new(arr, json_string(f->tag));
        js = json_dumps(arr, JSON_COMPACT);
        sqlite3_bind_text(st, 10, js ? js : "[\"\"]", -1, SQLITE_TRANSIENT);
        free(js);
        json_decref(arr);
    }
    bind_text(st, 11, f->employee_id);
    out->items = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*out->items));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == f->limit) {
            out->has_more = true;
            break;
        }
        read_document(st, a, &out->items[out->n++]);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "document list");
}

static int s_document_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    const char *texts[] = {t->org_id, mode_names[t->mode], id};
    int rc = db_run(s, "DELETE FROM documents WHERE org_id = ?1 AND mode = ?2 AND id = ?3", texts,
                    3, NULL, 0);
    if (!rc && sqlite3_changes(DB(s)) == 0)
        rc = ERR_NOT_FOUND;
    return rc;
}

static int s_document_next(struct store *s, const char *after_id, struct arena *a,
                           struct store_document *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " DOC_COLS " FROM documents d WHERE d.status = 'processing'"
                           " AND (?1 IS NULL OR d.id > ?1) ORDER BY d.id LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare document next");
    bind_text(st, 1, after_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        read_document(st, a, out);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return ERR_NOT_FOUND;
    return rc == SQLITE_ROW ? 0 : fail(s, "document next");
}

static int s_document_finish(struct store *s, const char *id, const struct store_chunk *chunks,
                             size_t n, const char *error)
{
    sqlite3_stmt *st = NULL;
    const char *doc[] = {id};
    int rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    rc = db_run(s, "DELETE FROM chunks WHERE document_id = ?1", doc, 1, NULL, 0);
    if (!rc && !error && n > 0) {
        if (sqlite3_prepare_v2(DB(s),
                               "INSERT INTO chunks (id, document_id, org_id, mode, seq, page,"
                               " content, embedding, embed_model) SELECT ?1, id, org_id, mode, ?2,"
                               " ?3, ?4, ?5, ?7 FROM documents WHERE id = ?6",
                               -1, &st, NULL) != SQLITE_OK)
            rc = fail(s, "prepare chunk insert");
        for (size_t i = 0; !rc && i < n; i++) {
            char cid[ID_MAX];
            rc = id_new("chunk", cid, sizeof(cid));
            if (rc)
                break;
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, cid, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 2, (int64_t)i);
            if (chunks[i].page > 0)
                sqlite3_bind_int(st, 3, chunks[i].page);
            else
                sqlite3_bind_null(st, 3);
            sqlite3_bind_text(st, 4, chunks[i].content, -1, SQLITE_STATIC);
            if (chunks[i].embedding)
                sqlite3_bind_blob(st, 5, chunks[i].embedding, (int)(chunks[i].dim * sizeof(float)),
                                  SQLITE_STATIC);
            else
                sqlite3_bind_null(st, 5);
            sqlite3_bind_text(st, 6, id, -1, SQLITE_STATIC);
            bind_text(st, 7, chunks[i].embedding ? chunks[i].embed_model : NULL);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = fail(s, "insert chunk");
        }
        sqlite3_finalize(st);
    }
    if (!rc) {
        const char *texts[] = {id, error ? "failed" : "ready", error};
        const int64_t ints[] = {error ? 0 : (int64_t)n, clock_now_ms()};
        rc =
            db_run(s,
                   "UPDATE documents SET status = ?2, error = ?3, chunk_count = ?4, updated_at = ?5"
                   " WHERE id = ?1",
                   texts, 3, ints, 2);
    }
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    return rc;
}

#define TEXT_CANDIDATES 200

#define HIT_COLS "c.id, c.document_id, d.name, c.content, d.tags, coalesce(c.page, 0)"

static void read_hit(sqlite3_stmt *st, struct arena *a, struct store_hit *h)
{
    h->chunk_id = arena_col(a, st, 0);
    h->document_id = arena_col(a, st, 1);
    h->document_name = arena_col(a, st, 2);
    h->content = arena_col(a, st, 3);
    h->tags = arena_col(a, st, 4);
    h->page = sqlite3_column_int(st, 5);
}

/* Run one text-search statement 'sql' (parameters as in s_search_text) into 'out'. */
static int text_query(struct store *s, const char *sql, const struct store_tenant *t,
                      const char *fts_query, const struct store_search_filter *f, unsigned limit,
                      struct arena *a, struct store_hit *out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *n = 0;
    if (sqlite3_prepare_v2(DB(s), sql, -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare text search");
    bind_tenant(st, t);
    sqlite3_bind_text(st, 3, fts_query, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, limit);
    sqlite3_bind_int64(st, 5, TEXT_CANDIDATES);
    bind_text(st, 10, f->tags_json);
    bind_text(st, 11, f->employee_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < limit) {
        read_hit(st, a, &out[*n]);
        out[(*n)++].score = sqlite3_column_double(st, 6);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "text search");
}

/*
 * BM25 in two steps: FTS5 ranks its best TEXT_CANDIDATES matches on its fast path (no join),
 * and only those are joined and filtered by tenant and rules. The index is shared by all
 * tenants, so when that leaves fewer than 'limit' hits while the candidates were cut, the
 * whole match set is ranked again with the filters (exact, slower).
 */
static int s_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                         const struct store_search_filter *f, unsigned limit, struct arena *a,
                         struct store_hit **out, size_t *n)
{
    int rc;
    *out = arena_alloc(a, ((size_t)limit + 1) * sizeof(**out));
    rc = text_query(
        s,
        "SELECT " HIT_COLS ", m.score FROM (SELECT rowid, -bm25(chunks_fts) AS score,"
        " rank FROM chunks_fts WHERE chunks_fts MATCH ?3 ORDER BY rank LIMIT ?5) m"
        " JOIN chunks c ON c.rowid = m.rowid JOIN documents d ON d.id ="
        " c.document_id WHERE c.org_id = ?1 AND c.mode = ?2 AND d.status = 'ready'" DOC_RULES
        " ORDER BY m.rank LIMIT ?4",
        t, fts_query, f, limit, a, *out, n);
    if (rc || *n >= limit)
        return rc;
    {
        /* Were the candidates cut? Then a fuller answer may exist. */
        sqlite3_stmt *st = NULL;
        int64_t matches = 0;
        if (sqlite3_prepare_v2(DB(s),
                               "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE"
                               " chunks_fts MATCH ?1 LIMIT ?2)",
                               -1, &st, NULL) != SQLITE_OK)
            return fail(s, "prepare match count");
        sqlite3_bind_text(st, 1, fts_query, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, TEXT_CANDIDATES + 1);
        if (sqlite3_step(st) == SQLITE_ROW)
            matches = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (matches <= TEXT_CANDIDATES)
            return 0;
    }
    return text_query(s,
                      "SELECT " HIT_COLS ", -bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON"
                      " c.rowid = chunks_fts.rowid JOIN documents d ON d.id = c.document_id"
                      " WHERE chunks_fts MATCH ?3 AND c.org_id = ?1 AND c.mode = ?2 AND"
                      " d.status = 'ready'" DOC_RULES " ORDER BY bm25(chunks_fts) LIMIT ?4",
                      t, fts_query, f, limit, a, *out, n);
}

static int s_hits_by_rowid(struct store *s, const int64_t *rowids, const double *scores, size_t n,
                           struct arena *a, struct store_hit **out, size_t *nout)
{
    sqlite3_stmt *st = NULL;
    *nout = 0;
    *out = arena_alloc(a, (n + 1) * sizeof(**out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " HIT_COLS " FROM chunks c JOIN documents d ON d.id ="
                           " c.document_id WHERE c.rowid = ?1 AND d.status = 'ready'",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare hit read");
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, rowids[i]);
        if (sqlite3_step(st) == SQLITE_ROW) {
            read_hit(st, a, &(*out)[*nout]);
            (*out)[(*nout)++].score = scores[i];
        }
    }
    sqlite3_finalize(st);
    return 0;
}

static int s_vectors_each(struct store *s, const struct store_tenant *t,
                          int (*fn)(void *ud, const struct store_vector_row *row), void *ud)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(
            DB(s),
            "SELECT c.rowid, c.document_id, d.tags, d.employee_ids, c.embedding,"
            " c.embed_model FROM chunks c JOIN documents d ON d.id = c.document_id WHERE"
            " c.org_id = ?1 AND c.mode = ?2 AND d.status = 'ready'"
            " ORDER BY c.document_id, c.rowid",
            -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare vectors");
    bind_tenant(st, t);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_vector_row row;
        int frc;
        row.rowid = sqlite3_column_int64(st, 0);
        row.document_id = (const char *)sqlite3_column_text(st, 1);
        row.tags = (const char *)sqlite3_column_text(st, 2);
        row.employee_ids = (const char *)sqlite3_column_text(st, 3);
        row.embedding = sqlite3_column_blob(st, 4);
        row.dim = (size_t)sqlite3_column_bytes(st, 4) / sizeof(float);
        row.embed_model = (const char *)sqlite3_column_text(st, 5);
        frc = fn(ud, &row);
        if (frc) {
            sqlite3_finalize(st);
            return frc;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail(s, "vectors");
}

static int s_search_vectors(struct store *s, const struct store_tenant *t, const float *q,
                            size_t dim, const struct store_search_filter *f, unsigned limit,
                            struct arena *a, struct store_hit **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int64_t *best_row;
    double *best;
    size_t have = 0;
    int rc;

    *n = 0;
    *out = arena_alloc(a, ((size_t)limit + 1) * sizeof(**out));
    best_row = arena_alloc(a, ((size_t)limit + 1) * sizeof(*best_row));
    best = arena_alloc(a, ((size_t)limit + 1) * sizeof(*best));
    /* A scan with a small sorted top-k; the vectors are unit length, so cosine is a dot. */
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT c.rowid, c.embedding FROM chunks c JOIN documents d ON d.id ="
                           " c.document_id WHERE c.org_id = ?1 AND c.mode = ?2 AND d.status ="
                           " 'ready' AND c.embedding IS NOT NULL" DOC_RULES,
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare vector search");
    bind_tenant(st, t);
    bind_text(st, 10, f->tags_json);
    bind_text(st, 11, f->employee_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const float *v = sqlite3_column_blob(st, 1);
        double dot = 0;
        size_t pos;
        if (!v || (size_t)sqlite3_column_bytes(st, 1) != dim * sizeof(float))
            continue;
        for (size_t i = 0; i < dim; i++)
            dot += (double)q[i] * v[i];
        if (have == limit && dot <= best[have - 1])
            continue;
        pos = have < limit ? have++ : limit - 1;
        while (pos > 0 && best[pos - 1] < dot) {
            best[pos] = best[pos - 1];
            best_row[pos] = best_row[pos - 1];
            pos--;
        }
        best[pos] = dot;
        best_row[pos] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_DONE)
        return fail(s, "vector search");
    return s_hits_by_rowid(s, best_row, best, have, a, out, n);
}

static int s_chunks_stale(struct store *s, const char *model, int64_t after, unsigned limit,
                          struct arena *a, struct store_stale_chunk **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *n = 0;
    *out = arena_alloc(a, ((size_t)limit + 1) * sizeof(**out));
    /* Three ranges of chunks_by_model, not a scan: NULL, below and above 'model'. */
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT c.rowid, c.content, c.org_id, c.mode FROM chunks c JOIN"
                           " documents d ON d.id = c.document_id WHERE (c.embed_model IS NULL OR"
                           " c.embed_model < ?1 OR c.embed_model > ?1) AND c.rowid > ?2 AND"
                           " d.status = 'ready' ORDER BY c.rowid LIMIT ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare stale chunks");
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < limit) {
        struct store_stale_chunk *c = &(*out)[(*n)++];
        c->rowid = sqlite3_column_int64(st, 0);
        c->content = arena_col(a, st, 1);
        copy_col(st, 2, c->tenant.org_id, sizeof(c->tenant.org_id));
        c->tenant.mode = mode_from_name(sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "stale chunks");
}

static int s_chunks_set_vectors(struct store *s, const int64_t *rowids, size_t n, const float *vecs,
                                size_t dim, const char *model)
{
    sqlite3_stmt *st = NULL;
    int rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(DB(s),
                           "UPDATE chunks SET embedding = ?1, embed_model = ?2 WHERE rowid = ?3",
                           -1, &st, NULL) != SQLITE_OK)
        rc = fail(s, "prepare vector update");
    for (size_t i = 0; !rc && i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_blob(st, 1, vecs + i * dim, (int)(dim * sizeof(float)), SQLITE_STATIC);
        sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, rowids[i]);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = fail(s, "vector update");
    }
    sqlite3_finalize(st);
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    return rc;
}

/* ---- Workflows ---- */

#define WF_COLS                                                                                    \
    "id, name, description, trigger_type, trigger, steps, webhook_token, recurring,"               \
    " coalesce(next_run_at, 0), enabled, run_count, coalesce(last_run_at, 0), created_at,"         \
    " updated_at, org_id, mode"

static void read_workflow(sqlite3_stmt *st, struct arena *a, void *pout)
{
    struct store_workflow *w = pout;
    memset(w, 0, sizeof(*w));
    w->id = arena_col(a, st, 0);
    w->name = arena_col(a, st, 1);
    w->description = arena_col(a, st, 2);
    w->trigger_type = arena_col(a, st, 3);
    w->trigger = arena_col(a, st, 4);
    w->steps = arena_col(a, st, 5);
    w->webhook_token = arena_col(a, st, 6);
    w->recurring = arena_col(a, st, 7);
    w->next_run_at = sqlite3_column_int64(st, 8);
    w->enabled = sqlite3_column_int(st, 9) != 0;
    w->run_count = sqlite3_column_int64(st, 10);
    w->last_run_at = sqlite3_column_int64(st, 11);
    w->created_at = sqlite3_column_int64(st, 12);
    w->updated_at = sqlite3_column_int64(st, 13);
    copy_col(st, 14, w->tenant.org_id, sizeof(w->tenant.org_id));
    w->tenant.mode = mode_from_name(sqlite3_column_text(st, 15));
}

static int s_workflow_create(struct store *s, const struct store_tenant *t,
                             const struct store_workflow *w)
{
    const char *texts[] = {
        w->id,      t->org_id, mode_names[t->mode], w->name,     w->description, w->trigger_type,
        w->trigger, w->steps,  w->webhook_token,    w->recurring};
    const int64_t ints[] = {w->next_run_at, w->enabled ? 1 : 0, w->created_at, w->updated_at};
    return db_run(
        s,
        "INSERT INTO workflows (id, org_id, mode, name, description, trigger_type, trigger,"
        " steps, webhook_token, recurring, next_run_at, enabled, created_at, updated_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, nullif(?11, 0), ?12, ?13, ?14)",
        texts, 10, ints, 4);
}

static int s_workflow_get(struct store *s, const struct store_tenant *t, const char *id,
                          struct arena *a, struct store_workflow *out)
{
    const char *texts[] = {id};
    return query_one(
        s, "SELECT " WF_COLS " FROM workflows WHERE org_id = ?1 AND mode = ?2 AND id = ?3", t,
        texts, 1, read_workflow, a, out);
}

static int s_workflow_by_token(struct store *s, const char *token, struct arena *a,
                               struct store_workflow *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(DB(s), "SELECT " WF_COLS " FROM workflows WHERE webhook_token = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return fail(s, "prepare workflow by token");
    bind_text(st, 1, token);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        read_workflow(st, a, out);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return ERR_NOT_FOUND;
    return rc == SQLITE_ROW ? 0 : fail(s, "workflow by token");
}

static int s_workflow_list(struct store *s, const struct store_tenant *t, unsigned limit,
                           int64_t before_created, const char *before_id, struct arena *a,
                           struct store_workflow_page *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " WF_COLS " FROM workflows WHERE org_id = ?1 AND mode = ?2"
                           " AND (?4 IS NULL OR (created_at, id) < (?3, ?4))"
                           " ORDER BY created_at DESC, id DESC LIMIT ?5",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare workflow list");
    bind_tenant(st, t);
    sqlite3_bind_int64(st, 3, before_created);
    bind_text(st, 4, before_id);
    sqlite3_bind_int64(st, 5, (int64_t)limit + 1);
    out->items = arena_alloc(a, ((size_t)limit + 1) * sizeof(*out->items));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == limit) {
            out->has_more = true;
            break;
        }
        read_workflow(st, a, &out->items[out->n++]);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "workflow list");
}

static int s_workflow_update(struct store *s, const struct store_tenant *t,
                             const struct store_workflow *w)
{
    const char *texts[] = {
        w->id,      t->org_id, mode_names[t->mode], w->name,     w->description, w->trigger_type,
        w->trigger, w->steps,  w->webhook_token,    w->recurring};
    const int64_t ints[] = {w->next_run_at, w->enabled ? 1 : 0, w->updated_at};
    int rc =
        db_run(s,
               "UPDATE workflows SET name = ?4, description = ?5, trigger_type = ?6, trigger = ?7,"
               " steps = ?8, webhook_token = ?9, recurring = ?10, next_run_at = nullif(?11, 0),"
               " enabled = ?12, updated_at = ?13 WHERE id = ?1 AND org_id = ?2 AND mode = ?3",
               texts, 10, ints, 3);
    if (!rc && sqlite3_changes(DB(s)) == 0)
        rc = ERR_NOT_FOUND;
    return rc;
}

static int s_workflow_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    const char *texts[] = {t->org_id, mode_names[t->mode], id};
    int rc = db_run(s, "DELETE FROM workflows WHERE org_id = ?1 AND mode = ?2 AND id = ?3", texts,
                    3, NULL, 0);
    if (!rc && sqlite3_changes(DB(s)) == 0)
        rc = ERR_NOT_FOUND;
    return rc;
}

/* ---- Workflow runs ---- */

#define RUN_COLS                                                                                   \
    "id, workflow_id, status, trigger_type, trigger_event, trigger_data, definition, error,"       \
    " credits_used, created_at, coalesce(started_at, 0), coalesce(completed_at, 0), next_step,"    \
    " step_count, org_id, mode"

static void read_run(sqlite3_stmt *st, struct arena *a, void *pout)
{
    struct store_wf_run *r = pout;
    memset(r, 0, sizeof(*r));
    r->id = arena_col(a, st, 0);
    r->workflow_id = arena_col(a, st, 1);
    r->status = arena_col(a, st, 2);
    r->trigger_type = arena_col(a, st, 3);
    r->trigger_event = arena_col(a, st, 4);
    r->trigger_data = arena_col(a, st, 5);
    r->definition = arena_col(a, st, 6);
    r->error = arena_col(a, st, 7);
    r->credits_used = sqlite3_column_int64(st, 8);
    r->created_at = sqlite3_column_int64(st, 9);
    r->started_at = sqlite3_column_int64(st, 10);
    r->completed_at = sqlite3_column_int64(st, 11);
    r->next_step = sqlite3_column_int64(st, 12);
    /* The step count sizes 'steps' (read_run_steps). */
    r->nsteps = (size_t)sqlite3_column_int64(st, 13);
    copy_col(st, 14, r->tenant.org_id, sizeof(r->tenant.org_id));
    r->tenant.mode = mode_from_name(sqlite3_column_text(st, 15));
}

/* The steps of 'r' (its 'nsteps' says how many there are), in order. */
static int read_run_steps(struct store *s, struct arena *a, struct store_wf_run *r)
{
    sqlite3_stmt *st = NULL;
    size_t cap = r->nsteps;
    int rc;

    r->steps = arena_alloc(a, (cap ? cap : 1) * sizeof(*r->steps));
    r->nsteps = 0;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT employee_id, action, status, input, output, error, attempts,"
                           " credits_used, coalesce(started_at, 0), coalesce(completed_at, 0)"
                           " FROM workflow_run_steps WHERE run_id = ?1 ORDER BY idx",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare run steps");
    sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && r->nsteps < cap) {
        struct store_run_step *x = &r->steps[r->nsteps++];
        x->employee_id = arena_col(a, st, 0);
        x->action = arena_col(a, st, 1);
        x->status = arena_col(a, st, 2);
        x->input = arena_col(a, st, 3);
        x->output = arena_col(a, st, 4);
        x->error = arena_col(a, st, 5);
        x->attempts = sqlite3_column_int64(st, 6);
        x->credits_used = sqlite3_column_int64(st, 7);
        x->started_at = sqlite3_column_int64(st, 8);
        x->completed_at = sqlite3_column_int64(st, 9);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "run steps");
}

static int wf_run_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                      const char *run_id, struct arena *a, struct store_wf_run *out);

static int s_wf_run_create(struct store *s, const struct store_tenant *t,
                           const struct store_wf_run *r, struct arena *a, struct store_wf_run *out)
{
    int rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    rc = wf_runs_insert(s, t, r);
    if (!rc && out)
        rc = wf_run_get(s, t, r->workflow_id, r->id, a, out);
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    return rc;
}

/* A run and its steps are read in one read transaction, so that they agree: a step ending
 * between the two reads would show a running run with every step ended, or credits that do
 * not add up. */
static int wf_run_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                      const char *run_id, struct arena *a, struct store_wf_run *out)
{
    const char *texts[] = {workflow_id, run_id};
    int rc = query_one(s,
                       "SELECT " RUN_COLS " FROM workflow_runs WHERE org_id = ?1 AND mode = ?2"
                       " AND workflow_id = ?3 AND id = ?4",
                       t, texts, 2, read_run, a, out);
    return rc ? rc : read_run_steps(s, a, out);
}

static int s_wf_run_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                        const char *run_id, struct arena *a, struct store_wf_run *out)
{
    int rc = exec(s, "BEGIN");
    if (rc)
        return rc;
    rc = wf_run_get(s, t, workflow_id, run_id, a, out);
    if (exec(s, rc ? "ROLLBACK" : "COMMIT") && !rc)
        rc = ERR_STORE;
    return rc;
}

static int wf_run_page(struct store *s, const struct store_tenant *t, const char *workflow_id,
                       unsigned limit, int64_t before_created, const char *before_id,
                       struct arena *a, struct store_wf_run_page *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " RUN_COLS " FROM workflow_runs INDEXED BY"
                           " workflow_runs_by_workflow WHERE workflow_id = ?3 AND org_id = ?1 AND"
                           " mode = ?2 AND (?5 IS NULL OR (created_at, id) < (?4, ?5))"
                           " ORDER BY created_at DESC, id DESC LIMIT ?6",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare run list");
    bind_tenant(st, t);
    sqlite3_bind_text(st, 3, workflow_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, before_created);
    bind_text(st, 5, before_id);
    sqlite3_bind_int64(st, 6, (int64_t)limit + 1);
    out->items = arena_alloc(a, ((size_t)limit + 1) * sizeof(*out->items));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == limit) {
            out->has_more = true;
            break;
        }
        read_run(st, a, &out->items[out->n++]);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(s, "run list");
    for (size_t i = 0; i < out->n; i++) {
        rc = read_run_steps(s, a, &out->items[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* One read transaction, as s_wf_run_get(). */
static int s_wf_run_list(struct store *s, const struct store_tenant *t, const char *workflow_id,
                         unsigned limit, int64_t before_created, const char *before_id,
                         struct arena *a, struct store_wf_run_page *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    rc = exec(s, "BEGIN");
    if (rc)
        return rc;
    rc = wf_run_page(s, t, workflow_id, limit, before_created, before_id, a, out);
    if (exec(s, rc ? "ROLLBACK" : "COMMIT") && !rc)
        rc = ERR_STORE;
    return rc;
}

/* The status of run 'run_id' of the tenant and workflow into 'status' ("" when there is no
 * such run), and its lease ("" when none). */
static int run_state(struct store *s, const struct store_tenant *t, const char *workflow_id,
                     const char *run_id, char *status, size_t n, char *lease, size_t ln)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *status = *lease = '\0';
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT status, lease FROM workflow_runs WHERE org_id = ?1 AND mode ="
                           " ?2 AND id = ?3 AND (?4 IS NULL OR workflow_id = ?4)",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare run state");
    bind_tenant(st, t);
    sqlite3_bind_text(st, 3, run_id, -1, SQLITE_STATIC);
    bind_text(st, 4, workflow_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        copy_col(st, 0, status, n);
        copy_col(st, 1, lease, ln);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "run state");
}

static int s_wf_run_cancel(struct store *s, const struct store_tenant *t, const char *workflow_id,
                           const char *run_id, int64_t now)
{
    char status[16], lease[ID_MAX];
    int rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    rc = run_state(s, t, workflow_id, run_id, status, sizeof(status), lease, sizeof(lease));
    if (!rc && !*status)
        rc = ERR_NOT_FOUND;
    else if (!rc && strcmp(status, "queued") != 0 && strcmp(status, "running") != 0)
        rc = ERR_CONFLICT;
    if (!rc) {
        const char *texts[] = {run_id};
        const int64_t ints[] = {now};
        rc = db_run(
            s, "UPDATE workflow_runs SET status = 'cancelled', completed_at = ?2 WHERE id = ?1",
            texts, 1, ints, 1);
        if (!rc)
            rc =
                db_run(s,
                       "UPDATE workflow_run_steps SET status = 'cancelled', completed_at = ?2 WHERE"
                       " run_id = ?1 AND status = 'pending'",
                       texts, 1, ints, 1);
    }
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    return rc;
}

static const char *const step_status[] = {
    [STORE_STEP_COMPLETED] = "completed",
    [STORE_STEP_SKIPPED] = "skipped",
    [STORE_STEP_RETRY] = "pending",
    [STORE_STEP_FAILED] = "failed",
};

/* The run goes on after step 'c->step' ended as 'in' says; inside the caller's transaction. */
static int run_advance(struct store *s, const struct store_step_finish *in, int64_t taken)
{
    const struct store_step_claim *c = in->claim;
    const char *texts[] = {c->run_id};
    int rc = 0;

    switch (in->outcome) {
    case STORE_STEP_COMPLETED:
    case STORE_STEP_SKIPPED: {
        const int64_t ints[] = {taken, c->step + 1, in->now};
        rc = db_run(s,
                    "UPDATE workflow_runs SET credits_used = credits_used + ?2, status = CASE WHEN"
                    " ?3 >= step_count THEN 'completed' ELSE status END, completed_at = CASE WHEN"
                    " ?3 >= step_count THEN ?4 END WHERE id = ?1",
                    texts, 1, ints, 3);
        if (!rc)
            rc = wf_runs_to_step(s, c->run_id, c->step + 1, in->now);
        break;
    }
    case STORE_STEP_RETRY:
        rc = wf_runs_to_step(s, c->run_id, c->step, in->retry_at);
        break;
    case STORE_STEP_FAILED: {
        const char *t2[] = {c->run_id, in->error};
        const int64_t ints[] = {c->step, in->now};
        rc = db_run(s,
                    "UPDATE workflow_run_steps SET status = 'cancelled', completed_at = ?4 WHERE"
                    " run_id = ?1 AND idx > ?3 AND status = 'pending'",
                    t2, 2, ints, 2);
        if (!rc)
            rc =
                db_run(s,
                       "UPDATE workflow_runs SET status = 'failed', error = 'steps[' || ?3 || ']: '"
                       " || coalesce(?2, 'failed'), completed_at = ?4, lease = NULL WHERE id = ?1",
                       t2, 2, ints, 2);
        break;
    }
    }
    return rc;
}

static int s_step_finish(struct store *s, const struct store_step_finish *in, int64_t *charged,
                         bool *discarded)
{
    const struct store_step_claim *c = in->claim;
    enum store_step_outcome outcome = in->outcome;
    char status[16], lease[ID_MAX];
    bool cancelled;
    int64_t taken = 0;
    int rc;

    *charged = 0;
    *discarded = false;
    rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    rc = run_state(s, &c->tenant, NULL, c->run_id, status, sizeof(status), lease, sizeof(lease));
    if (rc)
        goto rollback;
    if (!*status || strcmp(lease, c->lease) != 0) {
        /* Deleted with its workflow, or taken over: the outcome has nowhere to go. */
        *discarded = true;
        rc = employees_busy(s, &c->tenant, c->employee_id, -1);
        goto commit;
    }
    /* Cancelled meanwhile: the step's outcome is kept, uncharged, and nothing else runs. */
    cancelled = strcmp(status, "cancelled") == 0;
    if (cancelled && outcome == STORE_STEP_RETRY)
        outcome = STORE_STEP_FAILED;
    if (!cancelled && outcome == STORE_STEP_COMPLETED && c->tenant.mode == STORE_LIVE) {
        rc = orgs_take_credits(s, c->tenant.org_id, in->credits, &taken);
        if (rc)
            goto rollback;
    }
    {
        /* In a cancelled run, a step that did not complete ends cancelled. */
        const char *ended =
            cancelled && outcome != STORE_STEP_COMPLETED && outcome != STORE_STEP_SKIPPED
                ? "cancelled"
                : step_status[outcome];
        const char *texts[] = {
            c->run_id, ended, in->input, outcome == STORE_STEP_COMPLETED ? in->output : NULL,
            outcome == STORE_STEP_COMPLETED || outcome == STORE_STEP_SKIPPED ? NULL : in->error};
        const int64_t ints[] = {c->step, taken, outcome == STORE_STEP_RETRY ? 0 : in->now};
        rc = db_run(
            s,
            "UPDATE workflow_run_steps SET status = ?2, input = ?3, output = ?4, error = ?5,"
            " credits_used = ?7, completed_at = nullif(?8, 0) WHERE run_id = ?1 AND idx = ?6",
            texts, 5, ints, 3);
    }
    if (rc)
        goto rollback;
    if (cancelled) {
        const char *texts[] = {c->run_id};
        rc = db_run(s, "UPDATE workflow_runs SET lease = NULL WHERE id = ?1", texts, 1, NULL, 0);
    } else {
        rc = run_advance(s, in, taken);
    }
    if (!rc && outcome == STORE_STEP_COMPLETED) {
        struct store_event ev = {
            c->employee_id, "workflow_step", in->now, in->response_ms, taken, -1, NULL};
        rc = employees_event_add(s, &c->tenant, &ev);
    }
    if (!rc)
        rc = employees_busy(s, &c->tenant, c->employee_id, -1);
commit:
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        goto rollback;
    *charged = taken;
    return 0;
rollback:
    exec(s, "ROLLBACK");
    return rc;
}

/* ---- Integrations ---- */

static const unsigned char *arena_blob(struct arena *a, sqlite3_stmt *st, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    unsigned char *copy;
    *len = 0;
    if (!p || n <= 0)
        return NULL;
    copy = arena_alloc(a, (size_t)n);
    memcpy(copy, p, (size_t)n);
    *len = (size_t)n;
    return copy;
}

static int s_integration_get(struct store *s, const struct store_tenant *t, const char *provider,
                             struct arena *a, struct store_integration *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT provider, status, secrets, error, coalesce(connected_at, 0),"
                           " updated_at FROM integrations WHERE org_id = ?1 AND mode = ?2 AND"
                           " provider = ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare integration get");
    bind_tenant(st, t);
    bind_text(st, 3, provider);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->provider = arena_col(a, st, 0);
        out->status = arena_col(a, st, 1);
        out->secrets = arena_blob(a, st, 2, &out->secrets_len);
        out->error = arena_col(a, st, 3);
        out->connected_at = sqlite3_column_int64(st, 4);
        out->updated_at = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return ERR_NOT_FOUND;
    return rc == SQLITE_ROW ? 0 : fail(s, "integration get");
}

static int s_integration_put(struct store *s, const struct store_tenant *t,
                             const struct store_integration *in)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(DB(s),
                           "INSERT OR REPLACE INTO integrations (org_id, mode, provider, status,"
                           " secrets, error, connected_at, updated_at)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, nullif(?7, 0), ?8)",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare integration put");
    bind_tenant(st, t);
    bind_text(st, 3, in->provider);
    bind_text(st, 4, in->status);
    if (in->secrets)
        sqlite3_bind_blob(st, 5, in->secrets, (int)in->secrets_len, SQLITE_STATIC);
    bind_text(st, 6, in->error);
    sqlite3_bind_int64(st, 7, in->connected_at);
    sqlite3_bind_int64(st, 8, in->updated_at);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail(s, "integration put");
}

static int s_integration_delete(struct store *s, const struct store_tenant *t, const char *provider)
{
    const char *texts[] = {t->org_id, mode_names[t->mode], provider};
    return db_run(s, "DELETE FROM integrations WHERE org_id = ?1 AND mode = ?2 AND provider = ?3",
                  texts, 3, NULL, 0);
}

static int s_oauth_state_create(struct store *s, const struct store_oauth_state *in)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(DB(s),
                           "INSERT INTO oauth_states (state_hash, org_id, mode, provider, verifier,"
                           " redirect_uri, scopes, created_at, expires_at)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare oauth state");
    bind_text(st, 1, in->state_hash);
    bind_text(st, 2, in->tenant.org_id);
    bind_text(st, 3, mode_names[in->tenant.mode]);
    bind_text(st, 4, in->provider);
    sqlite3_bind_blob(st, 5, in->verifier, (int)in->verifier_len, SQLITE_STATIC);
    bind_text(st, 6, in->redirect_uri);
    bind_text(st, 7, in->scopes);
    sqlite3_bind_int64(st, 8, in->created_at);
    sqlite3_bind_int64(st, 9, in->expires_at);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fail(s, "oauth state");
    /* States a day past their end are of no use to anyone. */
    {
        const int64_t ints[] = {in->created_at - 24LL * 3600 * 1000};
        return db_run(s, "DELETE FROM oauth_states WHERE expires_at < ?1", NULL, 0, ints, 1);
    }
}

/* One statement marks the state used and returns it: two callbacks with the same state
 * cannot both have it. */
static int s_oauth_state_take(struct store *s, const char *state_hash, const char *provider,
                              int64_t now, struct arena *a, struct store_oauth_state *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(DB(s),
                           "UPDATE oauth_states SET used_at = ?3 WHERE state_hash = ?1 AND"
                           " provider = ?2 AND used_at IS NULL AND expires_at > ?3 RETURNING"
                           " org_id, mode, verifier, redirect_uri, scopes, created_at, expires_at",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare oauth state take");
    bind_text(st, 1, state_hash);
    bind_text(st, 2, provider);
    sqlite3_bind_int64(st, 3, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(out->state_hash, sizeof(out->state_hash), "%s", state_hash);
        copy_col(st, 0, out->tenant.org_id, sizeof(out->tenant.org_id));
        out->tenant.mode = mode_from_name(sqlite3_column_text(st, 1));
        out->provider = arena_strdup(a, provider);
        out->verifier = arena_blob(a, st, 2, &out->verifier_len);
        out->redirect_uri = arena_col(a, st, 3);
        out->scopes = arena_col(a, st, 4);
        out->created_at = sqlite3_column_int64(st, 5);
        out->expires_at = sqlite3_column_int64(st, 6);
        rc = sqlite3_step(st); /* run the statement to its end */
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fail(s, "oauth state take");
    return out->provider ? 0 : ERR_NOT_FOUND;
}

static int s_oauth_state_open(struct store *s, const struct store_tenant *t, const char *provider,
                              int64_t now, bool *open)
{
    sqlite3_stmt *st = NULL;
    int rc;

    *open = false;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT 1 FROM oauth_states WHERE org_id = ?1 AND mode = ?2 AND"
                           " provider = ?3 AND used_at IS NULL AND expires_at > ?4 LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare oauth state open");
    bind_tenant(st, t);
    bind_text(st, 3, provider);
    sqlite3_bind_int64(st, 4, now);
    rc = sqlite3_step(st);
    *open = rc == SQLITE_ROW;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "oauth state open");
}

static int s_events_token(struct store *s, const struct store_tenant *t, const char *fresh,
                          struct arena *a, const char **token)
{
    const char *texts[] = {t->org_id, mode_names[t->mode], fresh};
    sqlite3_stmt *st = NULL;
    int rc = db_run(s,
                    "INSERT INTO integration_event_tokens (org_id, mode, token) VALUES (?1, ?2, ?3)"
                    " ON CONFLICT (org_id, mode) DO NOTHING",
                    texts, 3, NULL, 0);
    *token = NULL;
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT token FROM integration_event_tokens WHERE org_id = ?1 AND"
                           " mode = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare events token");
    bind_tenant(st, t);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *token = arena_col(a, st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : fail(s, "events token");
}

static int s_events_tenant(struct store *s, const char *token, struct store_tenant *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT org_id, mode FROM integration_event_tokens WHERE token = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return fail(s, "prepare events tenant");
    bind_text(st, 1, token);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        copy_col(st, 0, out->org_id, sizeof(out->org_id));
        out->mode = mode_from_name(sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return ERR_NOT_FOUND;
    return rc == SQLITE_ROW ? 0 : fail(s, "events tenant");
}

static int s_workflows_for_event(struct store *s, const struct store_tenant *t, const char *event,
                                 struct arena *a, struct store_workflow **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;

    *n = 0;
    *out = arena_alloc(a, STORE_EVENT_WORKFLOWS_MAX * sizeof(**out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " WF_COLS " FROM workflows WHERE org_id = ?1 AND mode = ?2 AND"
                           " trigger_type = 'integration' AND enabled = 1 AND"
                           " json_extract(trigger, '$.event') = ?3 ORDER BY created_at, id"
                           " LIMIT ?4",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare workflows for event");
    bind_tenant(st, t);
    bind_text(st, 3, event);
    sqlite3_bind_int(st, 4, STORE_EVENT_WORKFLOWS_MAX);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        read_workflow(st, a, &(*out)[(*n)++]);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail(s, "workflows for event");
}

static int s_delivery_note(struct store *s, const struct store_tenant *t, const char *provider,
                           const char *id, int64_t now, bool *first)
{
    const char *texts[] = {t->org_id, mode_names[t->mode], provider, id};
    const int64_t ints[] = {now};
    const int64_t old[] = {now - 7LL * 86400 * 1000};
    int rc = db_run(s,
                    "INSERT OR IGNORE INTO integration_deliveries (org_id, mode, provider,"
                    " delivery_id, received_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    texts, 4, ints, 1);
    *first = !rc && sqlite3_changes(DB(s)) == 1;
    if (!rc && *first)
        rc =
            db_run(s, "DELETE FROM integration_deliveries WHERE received_at < ?1", NULL, 0, old, 1);
    return rc;
}

/* ---- The driver (driver.h) ---- */

#define SQ(st) ((struct sq_stmt *)(st))

static struct db_stmt *d_prepare(struct store *s, const char *sql)
{
    struct sq_stmt *q = lookup(s, sql);
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
    int rc = sqlite3_step(q);
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
    return exec(s, "COMMIT");
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
    .reset_busy = s_reset_busy,
    .data_version = s_data_version,
    .org_get_by_slug = orgs_get_by_slug,
    .org_get = orgs_get,
    .org_create = orgs_create,
    .org_update = orgs_update,
    .backup = s_backup,
    .employee_set_tier = employees_set_tier,
    .key_create = keys_create,
    .key_find = keys_find,
    .key_auth = keys_auth,
    .key_list = keys_list,
    .key_revoke = keys_revoke,
    .employee_list = employees_list,
    .employee_get = employees_get,
    .employee_create = employees_insert,
    .employee_update = employees_update,
    .employee_summary = employees_summary,
    .employee_stats = employees_stats,
    .event_add = employees_event_add,
    .chat_begin = s_chat_begin,
    .chat_finish_in = chat_finish_in,
    .group_apply = group_run,
    .group_sync = s_group_sync,
    .chat_begin_in = chat_begin_in,
    .own_checkpoints = s_own_checkpoints,
    .maintain = s_maintain,
    .chat_abort = chat_abort,
    .conversation_get = conversations_get,
    .conversation_list = conversations_list,
    .conversation_delete = conversations_delete,
    .message_list = messages_list,
    .message_page = messages_page,
    .message_get = messages_get,
    .feedback_set = feedback_set,
    .idem_claim = idem_claim,
    .idem_complete = idem_complete,
    .idem_release = idem_release,
    .document_create = s_document_create,
    .document_get = s_document_get,
    .document_list = s_document_list,
    .document_delete = s_document_delete,
    .document_next = s_document_next,
    .document_progress = s_document_progress,
    .document_finish = s_document_finish,
    .search_text = s_search_text,
    .search_vectors = s_search_vectors,
    .vectors_each = s_vectors_each,
    .chunks_stale = s_chunks_stale,
    .chunks_set_vectors = s_chunks_set_vectors,
    .task_create = tasks_create,
    .task_get = tasks_get,
    .task_list = tasks_list,
    .task_update = tasks_update,
    .task_delete = tasks_delete,
    .task_runs = tasks_runs,
    .claim = tasks_claim,
    .task_finish = tasks_finish,
    .task_recover = tasks_recover,
    .hits_by_rowid = s_hits_by_rowid,
    .workflow_create = s_workflow_create,
    .workflow_get = s_workflow_get,
    .workflow_by_token = s_workflow_by_token,
    .workflow_list = s_workflow_list,
    .workflow_update = s_workflow_update,
    .workflow_delete = s_workflow_delete,
    .wf_run_create = s_wf_run_create,
    .wf_run_get = s_wf_run_get,
    .wf_run_list = s_wf_run_list,
    .wf_run_cancel = s_wf_run_cancel,
    .step_finish = s_step_finish,
    .integration_get = s_integration_get,
    .integration_put = s_integration_put,
    .integration_delete = s_integration_delete,
    .oauth_state_create = s_oauth_state_create,
    .oauth_state_take = s_oauth_state_take,
    .oauth_state_open = s_oauth_state_open,
    .events_token = s_events_token,
    .events_tenant = s_events_tenant,
    .delivery_note = s_delivery_note,
    .workflows_for_event = s_workflows_for_event,
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
