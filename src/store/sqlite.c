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

#define TASK_COLS                                                                                  \
    "t.id, t.employee_id, t.title, t.description, t.status, t.priority, t.recurring, t.run_id,"    \
    " t.result, t.error, coalesce(t.due_at, 0), coalesce(t.next_run_at, 0),"                       \
    " coalesce(t.last_run_at, 0), coalesce(t.started_at, 0), coalesce(t.completed_at, 0),"         \
    " t.created_at, t.updated_at, t.run_count, t.credits_used, t.org_id, t.mode, t.run_now"

static void read_task(sqlite3_stmt *st, struct arena *a, struct store_task *k)
{
    memset(k, 0, sizeof(*k));
    k->id = arena_col(a, st, 0);
    k->employee_id = arena_col(a, st, 1);
    k->title = arena_col(a, st, 2);
    k->description = arena_col(a, st, 3);
    k->status = arena_col(a, st, 4);
    k->priority = arena_col(a, st, 5);
    k->recurring = arena_col(a, st, 6);
    k->run_id = arena_col(a, st, 7);
    k->result = arena_col(a, st, 8);
    k->error = arena_col(a, st, 9);
    k->due_at = sqlite3_column_int64(st, 10);
    k->next_run_at = sqlite3_column_int64(st, 11);
    k->last_run_at = sqlite3_column_int64(st, 12);
    k->started_at = sqlite3_column_int64(st, 13);
    k->completed_at = sqlite3_column_int64(st, 14);
    k->created_at = sqlite3_column_int64(st, 15);
    k->updated_at = sqlite3_column_int64(st, 16);
    k->run_count = sqlite3_column_int64(st, 17);
    k->credits_used = sqlite3_column_int64(st, 18);
    copy_col(st, 19, k->tenant.org_id, sizeof(k->tenant.org_id));
    k->tenant.mode = mode_from_name(sqlite3_column_text(st, 20));
    k->run_now = sqlite3_column_int(st, 21) != 0;
}

/* 0 urgent .. 3 low: the queue's first key. */
static int64_t prio_rank(const char *p)
{
    static const char *const names[] = {"urgent", "high", "medium", "low"};
    for (int64_t i = 0; i < 4; i++) {
        if (p && strcmp(p, names[i]) == 0)
            return i;
    }
    return 2;
}

static int s_task_create(struct store *s, const struct store_tenant *t, const struct store_task *k)
{
    const char *texts[] = {k->id,          t->org_id,   mode_names[t->mode],
                           k->employee_id, k->title,    k->description ? k->description : "",
                           k->status,      k->priority, k->recurring};
    const int64_t ints[] = {prio_rank(k->priority), k->due_at, k->next_run_at, k->created_at};
    return db_run(s,
                  "INSERT INTO tasks (id, org_id, mode, employee_id, title, description, status,"
                  " priority, recurring, prio_rank, due_at, due_key, next_run_at, created_at,"
                  " updated_at, held) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, nullif(?11,"
                  " 0), coalesce(nullif(?11, 0), 9223372036854775807), nullif(?12, 0), ?13, ?13,"
                  " coalesce((SELECT disabled FROM employees WHERE id = ?4 AND org_id = ?2 AND"
                  " mode = ?3), 0))",
                  texts, 9, ints, 4);
}

static int s_task_get(struct store *s, const struct store_tenant *t, const char *id,
                      struct arena *a, struct store_task *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " TASK_COLS " FROM tasks t WHERE t.org_id = ?1 AND t.mode = ?2"
                           " AND t.id = ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare task read");
    bind_tenant(st, t);
    sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        read_task(st, a, out);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return ERR_NOT_FOUND;
    return rc == SQLITE_ROW ? 0 : fail(s, "task read");
}

static int s_task_list(struct store *s, const struct store_tenant *t,
                       const struct store_task_filter *f, struct arena *a,
                       struct store_task_page *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT " TASK_COLS " FROM tasks t WHERE t.org_id = ?1 AND t.mode = ?2"
                           " AND (?4 IS NULL OR (t.created_at, t.id) < (?3, ?4)) AND (?6 IS NULL"
                           " OR t.employee_id = ?6) AND (?7 IS NULL OR t.status = ?7) AND (?8 IS"
                           " NULL OR t.priority = ?8) ORDER BY t.created_at DESC, t.id DESC"
                           " LIMIT ?5",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare task list");
    bind_tenant(st, t);
    sqlite3_bind_int64(st, 3, f->before_created);
    bind_text(st, 4, f->before_id);
    sqlite3_bind_int64(st, 5, (int64_t)f->limit + 1);
    bind_text(st, 6, f->employee_id);
    bind_text(st, 7, f->status);
    bind_text(st, 8, f->priority);
    out->items = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*out->items));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == f->limit) {
            out->has_more = true;
            break;
        }
        read_task(st, a, &out->items[out->n++]);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "task list");
}

static int s_task_update(struct store *s, const struct store_tenant *t, const struct store_task *k,
                         const char *old_status, const char *old_run_id, bool cancel_run,
                         int64_t now)
{
    const char *texts[] = {t->org_id,    mode_names[t->mode],
                           k->id,        k->employee_id,
                           k->title,     k->description ? k->description : "",
                           k->status,    k->priority,
                           k->recurring, k->run_id,
                           k->result,    k->error,
                           old_status,   old_run_id};
    const int64_t ints[] = {prio_rank(k->priority), k->due_at,     k->next_run_at,
                            k->completed_at,        k->updated_at, k->run_now ? 1 : 0};
    int rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    rc =
        db_run(s,
               "UPDATE tasks SET employee_id = ?4, title = ?5, description = ?6, status = ?7,"
               " priority = ?8, recurring = ?9, run_id = ?10, result = ?11, error = ?12,"
               " prio_rank = ?15, due_at = nullif(?16, 0), due_key = coalesce(nullif(?16, 0),"
               " 9223372036854775807), next_run_at = nullif(?17, 0), completed_at = nullif(?18, 0),"
               " updated_at = ?19, run_now = ?20, held = coalesce((SELECT disabled FROM employees "
               "WHERE id = ?4"
               " AND org_id = ?1 AND mode = ?2), 0) WHERE org_id = ?1 AND mode = ?2 AND id = ?3"
               " AND status = ?13 AND run_id IS ?14",
               texts, 14, ints, 6);
    if (!rc && sqlite3_changes(DB(s)) == 0)
        rc = ERR_CONFLICT;
    if (!rc && cancel_run && old_run_id) {
        const char *rt[] = {old_run_id, k->error ? k->error : "Cancelled."};
        const int64_t ri[] = {now};
        rc = db_run(s,
                    "UPDATE task_runs SET status = 'cancelled', error = ?2, completed_at = ?3"
                    " WHERE id = ?1 AND status = 'in_progress'",
                    rt, 2, ri, 1);
    }
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    return rc;
}

static int s_task_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    const char *texts[] = {t->org_id, mode_names[t->mode], id};
    int rc = db_run(s, "DELETE FROM tasks WHERE org_id = ?1 AND mode = ?2 AND id = ?3", texts, 3,
                    NULL, 0);
    if (!rc && sqlite3_changes(DB(s)) == 0)
        rc = ERR_NOT_FOUND;
    return rc;
}

static int s_task_runs(struct store *s, const struct store_tenant *t, const char *task_id,
                       unsigned limit, int64_t before_started, const char *before_id,
                       struct arena *a, struct store_run_page *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT id, status, result, error, started_at, coalesce(completed_at,"
                           " 0), credits_used FROM task_runs WHERE org_id = ?1 AND mode = ?2 AND"
                           " task_id = ?3 AND (?5 IS NULL OR (started_at, id) < (?4, ?5))"
                           " ORDER BY started_at DESC, id DESC LIMIT ?6",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare run list");
    bind_tenant(st, t);
    sqlite3_bind_text(st, 3, task_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, before_started);
    bind_text(st, 5, before_id);
    sqlite3_bind_int64(st, 6, (int64_t)limit + 1);
    out->items = arena_alloc(a, ((size_t)limit + 1) * sizeof(*out->items));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_task_run *r;
        if (out->n == limit) {
            out->has_more = true;
            break;
        }
        r = &out->items[out->n++];
        r->id = arena_col(a, st, 0);
        r->status = arena_col(a, st, 1);
        r->result = arena_col(a, st, 2);
        r->error = arena_col(a, st, 3);
        r->started_at = sqlite3_column_int64(st, 4);
        r->completed_at = sqlite3_column_int64(st, 5);
        r->credits_used = sqlite3_column_int64(st, 6);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail(s, "run list");
}

/* Recurring tasks whose occurrence has come and that are not waiting or running: pending. */
static int wake_recurring(struct store *s, int64_t now)
{
    const int64_t ints[] = {now};
    return db_run(s,
                  "UPDATE tasks SET status = 'pending', updated_at = ?1 WHERE recurring IS NOT NULL"
                  " AND next_run_at <= ?1 AND status IN ('completed', 'failed')",
                  NULL, 0, ints, 1);
}

/* ---- The durable queue: task runs and workflow steps ---- */

/* When time next makes something runnable after 'now': a recurring task's occurrence, a
 * scheduled workflow's, or a retried step's backoff (0: nothing). */
static int64_t next_wake(struct store *s, int64_t now)
{
    sqlite3_stmt *st = NULL;
    int64_t at = 0;
    if (sqlite3_prepare_v2(
            DB(s),
            "SELECT min(coalesce((SELECT min(next_run_at) FROM tasks WHERE recurring IS NOT NULL"
            " AND next_run_at > ?1), 9e18), coalesce((SELECT min(next_run_at) FROM workflows"
            " WHERE recurring IS NOT NULL AND enabled = 1 AND next_run_at > ?1), 9e18),"
            " coalesce((SELECT min(ready_at) FROM workflow_runs INDEXED BY workflow_runs_queue"
            " WHERE status IN ('queued', 'running') AND lease IS NULL AND held = 0 AND ready_at"
            " > ?1), 9e18))",
            -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, now);
    if (sqlite3_step(st) == SQLITE_ROW)
        at = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return at >= (int64_t)9e18 ? 0 : at;
}

/* Point run 'run_id' at its step 'idx', ready at 'ready_at' and free to claim; held while that
 * step's employee is offline. */
int run_to_step(struct store *s, const char *run_id, int64_t idx, int64_t ready_at)
{
    const char *texts[] = {run_id};
    const int64_t ints[] = {idx, ready_at};
    return db_run(
        s,
        "UPDATE workflow_runs SET next_step = ?2, ready_at = ?3, lease = NULL,"
        " step_employee_id = (SELECT employee_id FROM workflow_run_steps WHERE run_id = ?1"
        " AND idx = ?2), held = coalesce((SELECT e.disabled FROM workflow_run_steps x JOIN"
        " employees e ON e.id = x.employee_id WHERE x.run_id = ?1 AND x.idx = ?2), 0)"
        " WHERE id = ?1",
        texts, 1, ints, 2);
}

/* Insert run 'r' of tenant 't' (queued, its steps pending) and count it in its workflow;
 * inside the caller's transaction. ERR_NOT_FOUND: the workflow is gone. */
int insert_run(struct store *s, const struct store_tenant *t, const struct store_wf_run *r)
{
    int rc;
    {
        const char *texts[] = {
            r->id,           r->workflow_id,   t->org_id,       mode_names[t->mode],
            r->trigger_type, r->trigger_event, r->trigger_data, r->definition};
        const int64_t ints[] = {r->created_at};
        rc =
            db_run(s,
                   "INSERT INTO workflow_runs (id, workflow_id, org_id, mode, status, trigger_type,"
                   " trigger_event, trigger_data, definition, step_count, ready_at, created_at)"
                   " SELECT ?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?8, json_array_length(?8), ?9, ?9"
                   " FROM workflows WHERE id = ?2 AND org_id = ?3 AND mode = ?4",
                   texts, 8, ints, 1);
    }
    if (!rc && sqlite3_changes(DB(s)) == 0)
        rc = ERR_NOT_FOUND;
    if (!rc) {
        const char *texts[] = {r->id, r->definition};
        rc = db_run(
            s,
            "INSERT INTO workflow_run_steps (run_id, idx, employee_id, action, status) SELECT"
            " ?1, CAST(key AS INTEGER), json_extract(value, '$.employee_id'),"
            " json_extract(value, '$.action'), 'pending' FROM json_each(?2)",
            texts, 2, NULL, 0);
    }
    if (!rc)
        rc = run_to_step(s, r->id, 0, r->created_at);
    if (!rc) {
        const char *texts[] = {r->workflow_id};
        const int64_t ints[] = {r->created_at};
        rc = db_run(
            s, "UPDATE workflows SET run_count = run_count + 1, last_run_at = ?2 WHERE id = ?1",
            texts, 1, ints, 1);
    }
    return rc;
}

/* Every enabled scheduled workflow whose occurrence has come gets one queued run, and its
 * next occurrence after 'now' (missed occurrences make that one run). */
static int wake_schedules(struct store *s, int64_t now, store_next_run_fn next_run)
{
    struct due {
        struct store_tenant t;
        const char *id, *steps, *recurring;
        int64_t at;
    } *due = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *st = NULL;
    struct arena a;
    int rc = 0;

    arena_init(&a);
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT id, org_id, mode, steps, recurring, next_run_at FROM workflows"
                           " INDEXED BY workflows_scheduled WHERE recurring IS NOT NULL AND"
                           " next_run_at <= ?1 AND enabled = 1",
                           -1, &st, NULL) != SQLITE_OK) {
        arena_cleanup(&a);
        return fail(s, "prepare schedules");
    }
    sqlite3_bind_int64(st, 1, now);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            due = xrealloc(due, cap * sizeof(*due));
        }
        memset(&due[n], 0, sizeof(due[n]));
        due[n].id = arena_col(&a, st, 0);
        copy_col(st, 1, due[n].t.org_id, sizeof(due[n].t.org_id));
        due[n].t.mode = mode_from_name(sqlite3_column_text(st, 2));
        due[n].steps = arena_col(&a, st, 3);
        due[n].recurring = arena_col(&a, st, 4);
        due[n].at = sqlite3_column_int64(st, 5);
        n++;
    }
    sqlite3_finalize(st);
    rc = rc == SQLITE_DONE ? 0 : fail(s, "schedules");
    for (size_t i = 0; !rc && i < n; i++) {
        char run_id[ID_MAX], iso[32], data[64];
        struct store_wf_run r;
        memset(&r, 0, sizeof(r));
        rc = id_new("run", run_id, sizeof(run_id));
        if (rc)
            break;
        snprintf(data, sizeof(data), "{\"scheduled_at\":\"%s\"}",
                 clock_fmt_iso(due[i].at, iso, sizeof(iso)));
        r.id = run_id;
        r.workflow_id = due[i].id;
        r.trigger_type = "schedule";
        r.trigger_data = data;
        r.definition = due[i].steps;
        r.created_at = now;
        rc = insert_run(s, &due[i].t, &r);
        if (!rc) {
            const char *texts[] = {due[i].id};
            const int64_t ints[] = {next_run(due[i].recurring, now)};
            rc = db_run(s, "UPDATE workflows SET next_run_at = nullif(?2, 0) WHERE id = ?1", texts,
                        1, ints, 1);
        }
    }
    free(due);
    arena_cleanup(&a);
    return rc;
}

/* Take the first pending task of the queue index (set in_progress with a new run). */
static int claim_task(struct store *s, int64_t now, store_next_run_fn next_run,
                      struct store_task_claim *out)
{
    struct store_task *k = &out->task;
    int rc = id_new("trun", out->run_id, sizeof(out->run_id));
    if (rc)
        return rc;
    if (k->tenant.mode == STORE_LIVE) {
        const char *org[] = {k->tenant.org_id};
        rc = db_run(s, "UPDATE orgs SET credits = credits - 1 WHERE id = ?1 AND credits >= 1", org,
                    1, NULL, 0);
        if (rc)
            return rc;
        out->reserved = sqlite3_changes(DB(s)) == 1;
        out->no_credits = !out->reserved;
    }
    k->next_run_at = k->recurring ? next_run(k->recurring, now) : 0;
    {
        const char *texts[] = {out->run_id, k->id, k->tenant.org_id, mode_names[k->tenant.mode],
                               k->employee_id};
        const int64_t ints[] = {out->reserved ? 1 : 0, now};
        rc = db_run(
            s,
            "INSERT INTO task_runs (id, task_id, org_id, mode, employee_id, status, reserved,"
            " started_at) VALUES (?1, ?2, ?3, ?4, ?5, 'in_progress', ?6, ?7)",
            texts, 5, ints, 2);
    }
    if (!rc) {
        const char *texts[] = {k->id, out->run_id};
        const int64_t ints[] = {now, k->next_run_at};
        rc =
            db_run(s,
                   "UPDATE tasks SET status = 'in_progress', run_id = ?2, started_at = ?3,"
                   " last_run_at = ?3, run_count = run_count + 1, result = NULL, error = NULL,"
                   " completed_at = NULL, next_run_at = nullif(?4, 0), run_now = 0, updated_at = ?3"
                   " WHERE id = ?1",
                   texts, 2, ints, 2);
    }
    if (!rc)
        rc = employees_busy(s, &k->tenant, k->employee_id, 1);
    if (rc)
        return rc;
    k->status = "in_progress";
    k->run_id = out->run_id;
    k->started_at = k->last_run_at = now;
    k->run_count++;
    return 0;
}

/* Take the current step of run 'run_id' under a new lease. */
static int claim_step(struct store *s, int64_t now, const char *run_id,
                      struct store_step_claim *out)
{
    sqlite3_stmt *st = NULL;
    int rc = id_new("lease", out->lease, sizeof(out->lease));
    if (rc)
        return rc;
    {
        const char *texts[] = {run_id, out->lease};
        const int64_t ints[] = {now};
        rc = db_run(s,
                    "UPDATE workflow_runs SET status = 'running', started_at = coalesce(started_at,"
                    " ?3), lease = ?2 WHERE id = ?1",
                    texts, 2, ints, 1);
    }
    if (!rc) {
        const char *texts[] = {run_id};
        const int64_t ints[] = {now};
        rc = db_run(s,
                    "UPDATE workflow_run_steps SET status = 'running', attempts = attempts + 1,"
                    " started_at = coalesce(started_at, ?2) WHERE run_id = ?1 AND idx = (SELECT"
                    " next_step FROM workflow_runs WHERE id = ?1)",
                    texts, 1, ints, 1);
    }
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT r.org_id, r.mode, r.workflow_id, r.next_step, x.employee_id,"
                           " x.attempts FROM workflow_runs r JOIN workflow_run_steps x ON"
                           " x.run_id = r.id AND x.idx = r.next_step WHERE r.id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare step claim");
    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        copy_col(st, 0, out->tenant.org_id, sizeof(out->tenant.org_id));
        out->tenant.mode = mode_from_name(sqlite3_column_text(st, 1));
        copy_col(st, 2, out->workflow_id, sizeof(out->workflow_id));
        out->step = sqlite3_column_int64(st, 3);
        copy_col(st, 4, out->employee_id, sizeof(out->employee_id));
        out->attempts = sqlite3_column_int64(st, 5);
        snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return fail(s, "step claim");
    return employees_busy(s, &out->tenant, out->employee_id, 1);
}

static int s_claim(struct store *s, int64_t now, store_next_run_fn next_run, struct arena *a,
                   struct store_claim *out, int64_t *wake_at)
{
    sqlite3_stmt *st = NULL;
    struct store_task *k = &out->task.task;
    bool have_task = false, have_step = false;
    char run_id[ID_MAX] = "";
    int64_t ready_at = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    *wake_at = 0;
    /* First without the write lock: an idle queue costs the writers nothing. */
    if (sqlite3_prepare_v2(
            DB(s),
            "SELECT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_queue WHERE status = 'pending'"
            " AND held = 0 AND (next_run_at IS NULL OR next_run_at <= ?1 OR run_now = 1)) OR"
            " EXISTS (SELECT 1 FROM tasks WHERE recurring IS NOT NULL AND next_run_at <= ?1 AND"
            " status IN ('completed', 'failed')) OR EXISTS (SELECT 1 FROM workflow_runs INDEXED"
            " BY workflow_runs_queue WHERE status IN ('queued', 'running') AND lease IS NULL AND"
            " held = 0 AND ready_at <= ?1) OR EXISTS (SELECT 1 FROM workflows INDEXED BY"
            " workflows_scheduled WHERE recurring IS NOT NULL AND next_run_at <= ?1 AND enabled"
            " = 1)",
            -1, &st, NULL) != SQLITE_OK)
        return fail(s, "prepare queue check");
    if (!now)
        sqlite3_bind_int64(st, 1, clock_now_ms());
    else
        sqlite3_bind_int64(st, 1, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_int(st, 0) == 0) {
        sqlite3_finalize(st);
        *wake_at = next_wake(s, now ? now : clock_now_ms());
        return ERR_NOT_FOUND;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_ROW)
        return fail(s, "queue check");
    rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    /* Read the clock inside the write lock: no task created after it is committed yet, so
     * no run starts before its task was created. */
    if (now == 0)
        now = clock_now_ms();
    rc = wake_recurring(s, now);
    if (!rc)
        rc = wake_schedules(s, now, next_run);
    if (rc)
        goto rollback;
    /* The head of each queue index (tasks and runs of offline employees are not in them); a
     * recurring task waiting for its first occurrence is skipped. */
    if (sqlite3_prepare_v2(
            DB(s),
            "SELECT " TASK_COLS " FROM tasks t INDEXED BY tasks_queue WHERE"
            " t.status = 'pending' AND t.held = 0 AND (t.next_run_at IS NULL OR"
            " t.next_run_at <= ?1 OR t.run_now = 1) ORDER BY t.prio_rank, t.due_key, t.created_at,"
            " t.id LIMIT 1",
            -1, &st, NULL) != SQLITE_OK) {
        rc = fail(s, "prepare claim");
        goto rollback;
    }
    sqlite3_bind_int64(st, 1, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        read_task(st, a, k);
        have_task = true;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        rc = fail(s, "claim");
        goto rollback;
    }
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT id, ready_at FROM workflow_runs INDEXED BY workflow_runs_queue"
                           " WHERE status IN ('queued', 'running') AND lease IS NULL AND held = 0"
                           " AND ready_at <= ?1 ORDER BY ready_at, id LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = fail(s, "prepare step claim");
        goto rollback;
    }
    sqlite3_bind_int64(st, 1, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        copy_col(st, 0, run_id, sizeof(run_id));
        ready_at = sqlite3_column_int64(st, 1);
        have_step = true;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        rc = fail(s, "step claim");
        goto rollback;
    }
    if (have_task && have_step) {
        /* A step runs as a medium-priority task without a due date, ready at 'ready_at'. */
        int64_t rank = prio_rank(k->priority), due = k->due_at > 0 ? k->due_at : INT64_MAX;
        const int64_t medium = prio_rank("medium");
        bool step_first =
            rank > medium || (rank == medium && due == INT64_MAX && ready_at < k->created_at);
        if (step_first)
            have_task = false;
        else
            have_step = false;
    }
    if (have_task) {
        rc = claim_task(s, now, next_run, &out->task);
    } else if (have_step) {
        out->is_step = true;
        rc = claim_step(s, now, run_id, &out->step);
    } else {
        *wake_at = next_wake(s, now);
        rc = exec(s, "COMMIT");
        return rc ? rc : ERR_NOT_FOUND;
    }
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        goto rollback;
    return 0;
rollback:
    exec(s, "ROLLBACK");
    return rc;
}

static int s_task_finish(struct store *s, const struct store_task_finish *in, int64_t *charged,
                         bool *discarded)
{
    const char *status = in->ok ? "completed" : "failed";
    int64_t taken = in->reserved ? 1 : 0;
    int rc;

    *charged = 0;
    *discarded = false;
    rc = exec(s, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    {
        /* Still in progress? A PATCH may have cancelled it or a DELETE removed it. */
        sqlite3_stmt *st = NULL;
        bool live = false;
        if (sqlite3_prepare_v2(DB(s),
                               "SELECT 1 FROM task_runs r JOIN tasks t ON t.id = r.task_id AND"
                               " t.run_id = r.id WHERE r.id = ?1 AND r.status = 'in_progress'",
                               -1, &st, NULL) != SQLITE_OK) {
            rc = fail(s, "prepare run check");
            goto rollback;
        }
        sqlite3_bind_text(st, 1, in->run_id, -1, SQLITE_STATIC);
        live = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (!live) {
            *discarded = true;
            taken = 0;
            if (in->reserved) {
                const char *org[] = {in->tenant->org_id};
                rc = db_run(s, "UPDATE orgs SET credits = credits + 1 WHERE id = ?1", org, 1, NULL,
                            0);
            }
            if (!rc)
                rc = employees_busy(s, in->tenant, in->employee_id, -1);
            if (!rc)
                rc = exec(s, "COMMIT");
            if (rc)
                goto rollback;
            return 0;
        }
    }
    if (in->ok && in->credits > taken) {
        /* The rest of the price, up to what the organization has left. */
        int64_t extra = 0;
        rc = orgs_take_credits(s, in->tenant->org_id, in->credits - taken, &extra);
        if (rc)
            goto rollback;
        taken += extra;
    } else if (!in->ok && in->reserved) {
        /* A failed run costs nothing: the reserved credit goes back. */
        const char *org[] = {in->tenant->org_id};
        rc = db_run(s, "UPDATE orgs SET credits = credits + 1 WHERE id = ?1", org, 1, NULL, 0);
        if (rc)
            goto rollback;
        taken = 0;
    }
    {
        const char *texts[] = {in->run_id, status, in->result, in->error};
        const int64_t ints[] = {taken, in->now};
        rc = db_run(s,
                    "UPDATE task_runs SET status = ?2, result = ?3, error = ?4, credits_used = ?5,"
                    " completed_at = ?6, reserved = 0 WHERE id = ?1",
                    texts, 4, ints, 2);
    }
    if (!rc) {
        const char *texts[] = {in->task_id, status, in->result, in->error};
        const int64_t ints[] = {taken, in->now};
        rc = db_run(s,
                    "UPDATE tasks SET status = ?2, result = ?3, error = ?4, credits_used ="
                    " credits_used + ?5, completed_at = ?6, updated_at = ?6, run_id = NULL WHERE"
                    " id = ?1",
                    texts, 4, ints, 2);
    }
    if (!rc) {
        struct store_event ev = {in->employee_id,
                                 in->ok ? "task_completed" : "task_failed",
                                 in->now,
                                 in->response_ms,
                                 taken,
                                 -1,
                                 NULL};
        rc = employees_event_add(s, in->tenant, &ev);
    }
    if (!rc)
        rc = employees_busy(s, in->tenant, in->employee_id, -1);
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

static int s_task_recover(struct store *s, int64_t now, size_t *n, size_t *steps)
{
    const int64_t ints[] = {now};
    int rc = exec(s, "BEGIN IMMEDIATE");
    *n = *steps = 0;
    if (rc)
        return rc;
    /* Reserved credits back, then the runs end failed, then their tasks are pending again
     * (a recurring one at once: its interrupted occurrence runs again). */
    rc =
        exec(s, "UPDATE orgs SET credits = credits + (SELECT count(*) FROM task_runs r WHERE"
                " r.org_id = orgs.id AND r.status = 'in_progress' AND r.reserved = 1) WHERE id"
                " IN (SELECT org_id FROM task_runs WHERE status = 'in_progress' AND reserved = 1)");
    if (!rc)
        rc = db_run(
            s,
            "UPDATE task_runs SET status = 'failed', reserved = 0, completed_at = ?1, error ="
            " 'Interrupted by a restart: the server stopped during this run; the task runs"
            " again.' WHERE status = 'in_progress'",
            NULL, 0, ints, 1);
    if (!rc) {
        *n = (size_t)sqlite3_changes(DB(s));
        rc = db_run(
            s,
            "UPDATE tasks SET status = 'pending', run_id = NULL, updated_at = ?1, run_now = 1"
            " WHERE status = 'in_progress'",
            NULL, 0, ints, 1);
    }
    /* Workflow steps in flight: ready again, their cut attempt not counted (a cancelled run's
     * step in flight ends cancelled instead). */
    if (!rc)
        rc = db_run(
            s,
            "UPDATE workflow_run_steps SET status = CASE WHEN (SELECT r.status FROM"
            " workflow_runs r WHERE r.id = run_id) = 'cancelled' THEN 'cancelled' ELSE"
            " 'pending' END, attempts = max(0, attempts - 1), completed_at = CASE WHEN"
            " (SELECT r.status FROM workflow_runs r WHERE r.id = run_id) = 'cancelled' THEN ?1"
            " END WHERE status = 'running'",
            NULL, 0, ints, 1);
    if (!rc)
        rc = db_run(
            s,
            "UPDATE workflow_runs SET lease = NULL, ready_at = ?1 WHERE lease IS NOT NULL AND"
            " status IN ('queued', 'running')",
            NULL, 0, ints, 1);
    if (!rc) {
        *steps = (size_t)sqlite3_changes(DB(s));
        rc = exec(s, "UPDATE workflow_runs SET lease = NULL WHERE lease IS NOT NULL");
    }
    if (!rc)
        rc = exec(s, "COMMIT");
    if (rc)
        exec(s, "ROLLBACK");
    return rc;
}

/* ---- Workflows ---- */

/* Written once over the driver (workflows.c). */

/* ---- Integrations ---- */

/* Connections, OAuth states, events tokens, deliveries and the workflows of an event: written
 * once over the driver (integrations.c). */

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
    .data_version = s_data_version,
    .backup = s_backup,
    .chat_begin = s_chat_begin,
    .group_apply = group_run,
    .group_sync = s_group_sync,
    .own_checkpoints = s_own_checkpoints,
    .maintain = s_maintain,
    .document_create = documents_create,
    .document_get = documents_get,
    .document_list = documents_list,
    .document_delete = documents_delete,
    .document_next = documents_next,
    .document_progress = documents_progress,
    .document_finish = documents_finish,
    .search_text = chunks_search_text,
    .search_vectors = chunks_search_vectors,
    .vectors_each = chunks_vectors_each,
    .chunks_stale = chunks_stale,
    .chunks_set_vectors = chunks_set_vectors,
    .task_create = s_task_create,
    .task_get = s_task_get,
    .task_list = s_task_list,
    .task_update = s_task_update,
    .task_delete = s_task_delete,
    .task_runs = s_task_runs,
    .claim = s_claim,
    .task_finish = s_task_finish,
    .task_recover = s_task_recover,
    .hits_by_rowid = chunks_hits_by_rowid,
    .workflow_create = workflows_create,
    .workflow_get = workflows_get,
    .workflow_by_token = workflows_by_token,
    .workflow_list = workflows_list,
    .workflow_update = workflows_update,
    .workflow_delete = workflows_delete,
    .wf_run_create = workflow_runs_create,
    .wf_run_get = workflow_runs_get,
    .wf_run_list = workflow_runs_list,
    .wf_run_cancel = workflow_runs_cancel,
    .step_finish = workflow_steps_finish,
    .integration_get = integrations_get,
    .integration_put = integrations_put,
    .integration_delete = integrations_delete,
    .oauth_state_create = oauth_states_create,
    .oauth_state_take = oauth_states_take,
    .oauth_state_open = oauth_states_open,
    .events_token = events_token,
    .events_tenant = events_tenant,
    .delivery_note = deliveries_note,
    .workflows_for_event = workflows_for_event,
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
