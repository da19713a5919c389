/* SPDX-License-Identifier: MIT */
/*
 * knowledge.c: knowledge documents, their chunks and vectors, and the searches over them
 * (contract §11), written once over the driver (driver.h).
 *
 * What the two databases read differently is written twice and picked by db_dialect():
 *  - The access and tag rules of a list or search read the JSON arrays of a document (tags,
 *    employee_ids): json_each() on SQLite, jsonb_array_elements_text() on PostgreSQL.
 *  - The text search: FTS5 MATCH ranked by bm25() on SQLite (the chunks_fts table), and the
 *    generated tsvector column chunks.fts matched by a tsquery and ranked by ts_rank_cd() on
 *    PostgreSQL (sql_pg/003_knowledge.sql). The query arrives as FTS5 text on both (what
 *    knowledge_fts_query() makes); fts_tsquery() reads its terms for PostgreSQL.
 * Vectors are blobs of floats (BYTEA on PostgreSQL), compared in C.
 *
 * DESIGN. The knowledge worker takes no claim on a document: documents_next() is a cursor over
 * the documents still processing, the worker chooses among them under its own lock, and the
 * document stays 'processing' until documents_finish(). Nothing in the store keeps two
 * processes (nodes) from working on one document; documents_finish() locks the document row
 * first on PostgreSQL, so that two finishes of one document replace each other's chunks rather
 * than add to them.
 */
#include "store_int.h"

#include "../core/clock.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- Documents ---- */

#define DOC_COLS                                                                                   \
    "d.id, d.name, d.filename, d.content_type, d.sha256, d.tags, d.employee_ids, d.status,"        \
    " d.error, d.size_bytes, d.chunk_count, d.created_at, d.updated_at, d.org_id, d.mode,"         \
    " d.progress_chunks, d.progress_embedded"

/* The access and tag rules of a search or list of documents 'd', with parameter 'tags' (a JSON
 * array of tags, any of which the document must have; null: any) and 'reader' (an employee the
 * document must be open to; null: any reader). SQLite. */
#define SQ_RULES(tags, reader)                                                                     \
    " AND (" tags " IS NULL OR EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value IN"             \
    " (SELECT value FROM json_each(" tags "))))"                                                   \
    " AND (" reader " IS NULL OR d.employee_ids = '[]' OR EXISTS (SELECT 1 FROM"                   \
    " json_each(d.employee_ids) WHERE value = " reader "))"

/* The same rules on PostgreSQL, where the arrays are read as jsonb. */
#define PG_RULES(tags, reader)                                                                     \
    " AND (CAST(" tags " AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM"                                \
    " jsonb_array_elements_text(CAST(d.tags AS jsonb)) AS dt(v) WHERE dt.v IN"                     \
    " (SELECT jsonb_array_elements_text(CAST(CAST(" tags " AS TEXT) AS jsonb)))))"                 \
    " AND (CAST(" reader " AS TEXT) IS NULL OR d.employee_ids = '[]' OR EXISTS (SELECT 1 FROM"     \
    " jsonb_array_elements_text(CAST(d.employee_ids AS jsonb)) AS de(v) WHERE de.v = " reader "))"

/* The rules with the parameters of each statement. */
#define SQ_RULES_34 SQ_RULES("$3", "$4")
#define SQ_RULES_67 SQ_RULES("$6", "$7")
#define PG_RULES_34 PG_RULES("$3", "$4")
#define PG_RULES_56 PG_RULES("$5", "$6")
#define PG_RULES_67 PG_RULES("$6", "$7")

static double col_double(struct db_stmt *st, int col)
{
    return st->drv->col_double(st, col);
}

static void read_document(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_document *out = pout;
    out->id = db_arena_text(a, st, 0);
    out->name = db_arena_text(a, st, 1);
    out->filename = db_arena_text(a, st, 2);
    out->content_type = db_arena_text(a, st, 3);
    out->sha256 = db_arena_text(a, st, 4);
    out->tags = db_arena_text(a, st, 5);
    out->employee_ids = db_arena_text(a, st, 6);
    out->status = db_arena_text(a, st, 7);
    out->error = db_arena_text(a, st, 8);
    out->size_bytes = db_int64(st, 9);
    out->chunk_count = db_int64(st, 10);
    out->created_at = db_int64(st, 11);
    out->updated_at = db_int64(st, 12);
    db_copy(st, 13, out->tenant.org_id, sizeof(out->tenant.org_id));
    out->tenant.mode = db_mode(db_text(st, 14));
    out->progress_chunks = db_int64(st, 15);
    out->progress_embedded = db_int64(st, 16);
}

/* See store_int.h. */
int documents_progress(struct store *s, const char *id, int64_t chunks, int64_t embedded)
{
    const char *texts[] = {id};
    const int64_t ints[] = {chunks, embedded};
    return db_run(s,
                  "UPDATE documents SET progress_chunks = $2, progress_embedded = $3 WHERE id = $1"
                  " AND status = 'processing'",
                  texts, 1, ints, 2);
}

/* See store_int.h. */
int documents_create(struct store *s, const struct store_tenant *t, const struct store_document *d)
{
    const char *texts[] = {d->id,     t->org_id,   db_mode_name(t->mode),
                           d->name,   d->filename, d->content_type,
                           d->sha256, d->tags,     d->employee_ids};
    const int64_t ints[] = {d->size_bytes, d->created_at};
    return db_run(s,
                  "INSERT INTO documents (id, org_id, mode, name, filename, content_type, sha256,"
                  " tags, employee_ids, size_bytes, status, chunk_count, created_at, updated_at)"
                  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'processing', 0, $11, $11)",
                  texts, 9, ints, 2);
}

/* See store_int.h. */
int documents_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_document *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " DOC_COLS " FROM documents d WHERE d.org_id = $1 AND d.mode = $2"
                  " AND d.id = $3",
                  t, texts, 1, read_document, a, out);
}

/* See store_int.h. */
int documents_list(struct store *s, const struct store_tenant *t, const struct store_doc_filter *f,
                   struct arena *a, struct store_doc_page *out)
{
    struct db_stmt *st;
    char *tags = NULL;
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (db_dialect(s) == DB_POSTGRES)
        st = db_prepare(s, "SELECT " DOC_COLS " FROM documents d WHERE d.org_id = $1 AND"
                           " d.mode = $2 AND (CAST($4 AS TEXT) IS NULL OR"
                           " (d.created_at, d.id) < ($3, $4))" PG_RULES_67
                           " ORDER BY d.created_at DESC, d.id DESC LIMIT $5");
    else
        st = db_prepare(
            s, "SELECT " DOC_COLS " FROM documents d WHERE d.org_id = $1 AND"
               " d.mode = $2 AND ($4 IS NULL OR (d.created_at, d.id) < ($3, $4))" SQ_RULES_67
               " ORDER BY d.created_at DESC, d.id DESC LIMIT $5");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, f->before_created);
    db_bind_text(st, 4, f->before_id);
    db_bind_int64(st, 5, (int64_t)f->limit + 1);
    if (f->tag) {
        json_t *arr = json_array();
        json_array_append_new(arr, json_string(f->tag));
        tags = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
        db_bind_text(st, 6, tags ? tags : "[\"\"]");
    }
    db_bind_text(st, 7, f->employee_id);
    out->items = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        if (out->n == f->limit) {
            out->has_more = true;
            break;
        }
        read_document(st, a, &out->items[out->n++]);
    }
    db_done(st);
    free(tags);
    return rc;
}

/* Move the knowledge version of tenant 't' (inside the caller's transaction). */
static int touch_tenant(struct store *s, const struct store_tenant *t)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode)};
    return db_run(s,
                  "INSERT INTO tenant_versions (org_id, mode, knowledge) VALUES ($1, $2, 1)"
                  " ON CONFLICT (org_id, mode) DO UPDATE SET knowledge ="
                  " tenant_versions.knowledge + 1",
                  texts, 2, NULL, 0);
}

/* Move the knowledge version of the tenant of the row of 'sql' ($1: a key of that row), inside
 * the caller's transaction; nothing when there is no such row. */
static int touch_tenant_of(struct store *s, const char *sql, const char *text_key, int64_t int_key)
{
    struct db_stmt *st = db_prepare(s, sql);
    if (!st)
        return ERR_STORE;
    if (text_key)
        db_bind_text(st, 1, text_key);
    else
        db_bind_int64(st, 1, int_key);
    return db_exec(st);
}

/* See store_int.h. */
int documents_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    struct db_stmt *st;
    bool row;
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    st = db_prepare(s, "DELETE FROM documents WHERE org_id = $1 AND mode = $2 AND id = $3");
    if (!st) {
        rc = ERR_STORE;
    } else {
        db_bind_tenant(st, t);
        db_bind_text(st, 3, id);
        rc = db_step(st, &row);
        if (!rc && db_changes(st) == 0)
            rc = ERR_NOT_FOUND;
        db_done(st);
    }
    if (!rc)
        rc = touch_tenant(s, t);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/*
 * See store_int.h. A cursor over the documents still processing that no other node holds: the
 * worker looks at several and chooses one (knowledge/worker.c), then claims it
 * (documents_claim). A dead node's documents are released by nodes_recover.
 */
int documents_next(struct store *s, const char *after_id, struct arena *a,
                   struct store_document *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " DOC_COLS " FROM documents d WHERE d.status ="
                                       " 'processing' AND (CAST($1 AS TEXT) IS NULL OR d.id > $1)"
                                       " AND (d.node_id IS NULL OR d.node_id = $2)"
                                       " ORDER BY d.id LIMIT 1");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, after_id);
    db_bind_text(st, 2, store_node_id());
    rc = db_step(st, &row);
    if (!rc && row)
        read_document(st, a, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int documents_claim(struct store *s, const char *id)
{
    struct db_stmt *st = db_prepare(s, "UPDATE documents SET node_id = $2 WHERE id = $1 AND status"
                                       " = 'processing' AND (node_id IS NULL OR node_id = $2)");
    bool row;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, store_node_id());
    rc = db_step(st, &row);
    if (!rc && db_changes(st) == 0)
        rc = ERR_CONFLICT;
    db_done(st);
    return rc;
}

/* Insert chunk 'c', number 'seq' of document 'id', with a new id (inside the caller's
 * transaction). Nothing is inserted when the document is gone. */
static int insert_chunk(struct store *s, const char *id, size_t seq, const struct store_chunk *c)
{
    struct db_stmt *st;
    char cid[ID_MAX];
    int rc = id_new("chunk", cid, sizeof(cid));
    if (rc)
        return rc;
    st = db_prepare(s, "INSERT INTO chunks (id, document_id, org_id, mode, seq, page, content,"
                       " embedding, embed_model) SELECT $1, id, org_id, mode, $2, $3, $4, $5, $7"
                       " FROM documents WHERE id = $6");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, cid);
    db_bind_int64(st, 2, (int64_t)seq);
    if (c->page > 0)
        db_bind_int64(st, 3, c->page);
    else
        db_bind_null(st, 3);
    db_bind_text(st, 4, c->content);
    db_bind_blob(st, 5, c->embedding, c->dim * sizeof(float));
    db_bind_text(st, 6, id);
    db_bind_text(st, 7, c->embedding ? c->embed_model : NULL);
    rc = db_exec(st);
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* See store_int.h. */
int documents_finish(struct store *s, const char *id, const struct store_chunk *chunks, size_t n,
                     const char *error)
{
    const char *doc[] = {id};
    bool ends = false;
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    /* PostgreSQL: a second finish of this document (another node's) waits here for the first
     * to commit, and its delete below then sees the first one's chunks. SQLite's write
     * transaction already excludes every other writer. */
    if (db_dialect(s) == DB_POSTGRES)
        rc = db_run(s, "SELECT id FROM documents WHERE id = $1 FOR UPDATE", doc, 1, NULL, 0);
    /* whether this finish ends the processing (a second finish of the document, another
     * node's, replaces the chunks but announces nothing again) */
    if (!rc) {
        struct db_stmt *st = db_prepare(s, "SELECT status FROM documents WHERE id = $1");
        bool row = false;
        if (!st) {
            rc = ERR_STORE;
        } else {
            db_bind_text(st, 1, id);
            rc = db_step(st, &row);
            ends = !rc && row && strcmp(db_text(st, 0), "processing") == 0;
            db_done(st);
        }
    }
    if (!rc)
        rc = db_run(s, "DELETE FROM chunks WHERE document_id = $1", doc, 1, NULL, 0);
    for (size_t i = 0; !rc && !error && i < n; i++)
        rc = insert_chunk(s, id, i, &chunks[i]);
    if (!rc) {
        const char *texts[] = {id, error ? "failed" : "ready", error};
        const int64_t ints[] = {error ? 0 : (int64_t)n, clock_now_ms()};
        rc = db_run(
            s,
            "UPDATE documents SET status = $2, error = $3, chunk_count = $4, updated_at = $5,"
            " node_id = NULL WHERE id = $1",
            texts, 3, ints, 2);
    }
    if (!rc)
        rc = touch_tenant_of(s,
                             "INSERT INTO tenant_versions (org_id, mode, knowledge) SELECT org_id,"
                             " mode, 1 FROM documents WHERE id = $1 ON CONFLICT (org_id, mode) DO"
                             " UPDATE SET knowledge = tenant_versions.knowledge + 1",
                             id, 0);
    if (!rc && ends)
        rc = hook_document(s, id, clock_now_ms());
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int knowledge_version(struct store *s, const struct store_tenant *t, int64_t *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT knowledge FROM tenant_versions WHERE org_id = $1"
                                       " AND mode = $2");
    bool row = false;
    int rc;
    *out = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    rc = db_step(st, &row);
    if (!rc && row)
        *out = db_int64(st, 0);
    db_done(st);
    return rc;
}

/* ---- Searches ---- */

#define TEXT_CANDIDATES 200

#define HIT_COLS "c.id, c.document_id, d.name, c.content, d.tags, coalesce(c.page, 0)"

static void read_hit(struct db_stmt *st, struct arena *a, struct store_hit *h)
{
    h->chunk_id = db_arena_text(a, st, 0);
    h->document_id = db_arena_text(a, st, 1);
    h->document_name = db_arena_text(a, st, 2);
    h->content = db_arena_text(a, st, 3);
    h->tags = db_arena_text(a, st, 4);
    h->page = (int)db_int64(st, 5);
}

/* Up to 'limit' hits of 'st' (bound by the caller; the score at column 6) into 'out'. */
static int read_hits(struct db_stmt *st, unsigned limit, struct arena *a, struct store_hit *out,
                     size_t *n)
{
    bool row = false;
    int rc;
    *n = 0;
    while (!(rc = db_step(st, &row)) && row && *n < limit) {
        read_hit(st, a, &out[*n]);
        out[(*n)++].score = col_double(st, 6);
    }
    db_done(st);
    return rc;
}

/* Run one FTS5 search statement 'sql' (parameters as in sq_search_text) into 'out'. */
static int sq_text_query(struct store *s, const char *sql, const struct store_tenant *t,
                         const char *fts_query, const struct store_search_filter *f, unsigned limit,
                         struct arena *a, struct store_hit *out, size_t *n)
{
    struct db_stmt *st = db_prepare(s, sql);
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, fts_query);
    db_bind_int64(st, 4, limit);
    db_bind_int64(st, 5, TEXT_CANDIDATES);
    db_bind_text(st, 6, f->tags_json);
    db_bind_text(st, 7, f->employee_id);
    return read_hits(st, limit, a, out, n);
}

/*
 * SQLite: BM25 in two steps: FTS5 ranks its best TEXT_CANDIDATES matches on its fast path (no
 * join), and only those are joined and filtered by tenant and rules. The index is shared by
 * all tenants, so when that leaves fewer than 'limit' hits while the candidates were cut, the
 * whole match set is ranked again with the filters (exact, slower).
 */
static int sq_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                          const struct store_search_filter *f, unsigned limit, struct arena *a,
                          struct store_hit *out, size_t *n)
{
    struct db_stmt *st;
    int64_t matches = 0;
    bool row = false;
    int rc = sq_text_query(
        s,
        "SELECT " HIT_COLS ", m.score FROM (SELECT rowid, -bm25(chunks_fts) AS score,"
        " rank FROM chunks_fts WHERE chunks_fts MATCH $3 ORDER BY rank LIMIT $5) m"
        " JOIN chunks c ON c.rowid = m.rowid JOIN documents d ON d.id ="
        " c.document_id WHERE c.org_id = $1 AND c.mode = $2 AND d.status = 'ready'" SQ_RULES_67
        " ORDER BY m.rank LIMIT $4",
        t, fts_query, f, limit, a, out, n);
    if (rc || *n >= limit)
        return rc;
    /* Were the candidates cut? Then a fuller answer may exist. */
    st = db_prepare(s, "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE"
                       " chunks_fts MATCH $1 LIMIT $2)");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, fts_query);
    db_bind_int64(st, 2, TEXT_CANDIDATES + 1);
    if (db_step(st, &row) == 0 && row)
        matches = db_int64(st, 0);
    db_done(st);
    if (matches <= TEXT_CANDIDATES)
        return 0;
    return sq_text_query(s,
                         "SELECT " HIT_COLS ", -bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON"
                         " c.rowid = chunks_fts.rowid JOIN documents d ON d.id = c.document_id"
                         " WHERE chunks_fts MATCH $3 AND c.org_id = $1 AND c.mode = $2 AND"
                         " d.status = 'ready'" SQ_RULES_67 " ORDER BY bm25(chunks_fts) LIMIT $4",
                         t, fts_query, f, limit, a, out, n);
}

/* Whether 'w' of 'len' bytes is an FTS5 operator (as a bare word, FTS5 reads these as such). */
static bool fts_operator(const char *w, size_t len)
{
    static const char *const ops[] = {"OR", "AND", "NOT", "NEAR"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strlen(ops[i]) == len && memcmp(ops[i], w, len) == 0)
            return true;
    }
    return false;
}

/*
 * The PostgreSQL tsquery text (for to_tsquery()) of the FTS5 query 'fts', in 'a'; NULL when it
 * has no term. The FTS5 text accepted is what knowledge_fts_query() makes: terms, each an FTS5
 * string ("..." with "" for a quote inside) or a bare word, separated by OR. Every term is one
 * alternative of the tsquery ('t1' | 't2' | ...); a string of several words stays a phrase, as
 * in FTS5 (to_tsquery() cuts a quoted operand into words joined by <->). Other FTS5 syntax is
 * not read as such: AND, NOT and NEAR are dropped like OR (their terms become alternatives),
 * and ( ) : * ^ + are separators. The text is quoted for to_tsquery(), so that it is never a
 * syntax error there.
 */
static char *fts_tsquery(struct arena *a, const char *fts)
{
    size_t cap = 4 * strlen(fts) + 1; /* each byte at most doubled, plus " | " per term */
    char *out = arena_alloc(a, cap), *o = out;
    const char *p = fts;

    while (*p) {
        const char *w;
        size_t len;
        bool quoted = *p == '"';
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || strchr("():*^+", *p)) {
            p++;
            continue;
        }
        w = quoted ? ++p : p;
        if (quoted) {
            while (*p && !(p[0] == '"' && p[1] != '"'))
                p += p[0] == '"' ? 2 : 1;
        } else {
            while (*p && !strchr(" \t\n\r():*^+\"", *p))
                p++;
        }
        len = (size_t)(p - w);
        if (quoted && *p)
            p++; /* the closing quote */
        if (len == 0 || (!quoted && fts_operator(w, len)))
            continue;
        if (o != out) {
            memcpy(o, " | ", 3);
            o += 3;
        }
        *o++ = '\'';
        for (size_t i = 0; i < len; i++) {
            if (quoted && w[i] == '"')
                i++; /* "" is one quote */
            if (w[i] == '\'' || w[i] == '\\')
                *o++ = w[i];
            *o++ = w[i];
        }
        *o++ = '\'';
    }
    *o = '\0';
    return o == out ? NULL : out;
}

/*
 * PostgreSQL: the chunks whose tsvector (chunks.fts, 'simple' configuration) matches any term
 * of 'fts_query', ranked by cover density (ts_rank_cd, higher is better). One statement: the
 * GIN index or the tenant's index, as the planner sees fit, with the rules applied exactly.
 */
static int pg_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                          const struct store_search_filter *f, unsigned limit, struct arena *a,
                          struct store_hit *out, size_t *n)
{
    const char *q = fts_tsquery(a, fts_query);
    struct db_stmt *st;
    *n = 0;
    if (!q)
        return 0;
    st = db_prepare(s, "SELECT " HIT_COLS ", ts_rank_cd(c.fts, m.q) AS score FROM chunks c JOIN"
                       " documents d ON d.id = c.document_id CROSS JOIN (SELECT"
                       " to_tsquery('simple', CAST($3 AS TEXT)) AS q) AS m WHERE c.org_id = $1"
                       " AND c.mode = $2 AND d.status = 'ready' AND c.fts @@ m.q" PG_RULES_56
                       " ORDER BY score DESC, c.rowid LIMIT $4");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, q);
    db_bind_int64(st, 4, limit);
    db_bind_text(st, 5, f->tags_json);
    db_bind_text(st, 6, f->employee_id);
    return read_hits(st, limit, a, out, n);
}

/* See store_int.h. 'fts_query' is FTS5 text; on PostgreSQL, see fts_tsquery() for what of it
 * is read. */
int chunks_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                       const struct store_search_filter *f, unsigned limit, struct arena *a,
                       struct store_hit **out, size_t *n)
{
    *out = arena_alloc(a, ((size_t)limit + 1) * sizeof(**out));
    if (db_dialect(s) == DB_POSTGRES)
        return pg_search_text(s, t, fts_query, f, limit, a, *out, n);
    return sq_search_text(s, t, fts_query, f, limit, a, *out, n);
}

/* See store_int.h. */
int chunks_hits_by_rowid(struct store *s, const int64_t *rowids, const double *scores, size_t n,
                         struct arena *a, struct store_hit **out, size_t *nout)
{
    *nout = 0;
    *out = arena_alloc(a, (n + 1) * sizeof(**out));
    for (size_t i = 0; i < n; i++) {
        struct db_stmt *st = db_prepare(s, "SELECT " HIT_COLS " FROM chunks c JOIN documents d ON"
                                           " d.id = c.document_id WHERE c.rowid = $1 AND"
                                           " d.status = 'ready'");
        bool row = false;
        if (!st)
            return ERR_STORE;
        db_bind_int64(st, 1, rowids[i]);
        /* A chunk gone since it was scored (its document deleted) is left out. */
        if (db_step(st, &row) == 0 && row) {
            read_hit(st, a, &(*out)[*nout]);
            (*out)[(*nout)++].score = scores[i];
        }
        db_done(st);
    }
    return 0;
}

/* See store_int.h. */
int chunks_vectors_each(struct store *s, const struct store_tenant *t,
                        int (*fn)(void *ud, const struct store_vector_row *row), void *ud)
{
    struct db_stmt *st = db_prepare(s, "SELECT c.rowid, c.document_id, d.tags, d.employee_ids,"
                                       " c.embedding, c.embed_model FROM chunks c JOIN documents d"
                                       " ON d.id = c.document_id WHERE c.org_id = $1 AND"
                                       " c.mode = $2 AND d.status = 'ready'"
                                       " ORDER BY c.document_id, c.rowid");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    while (!(rc = db_step(st, &row)) && row) {
        struct store_vector_row r;
        size_t len;
        r.rowid = db_int64(st, 0);
        r.document_id = db_text(st, 1);
        r.tags = db_text(st, 2);
        r.employee_ids = db_text(st, 3);
        r.embedding = db_blob(st, 4, &len);
        r.dim = len / sizeof(float);
        r.embed_model = db_text(st, 5);
        rc = fn(ud, &r);
        if (rc)
            break;
    }
    db_done(st);
    return rc;
}

/* See store_int.h. A scan with a small sorted top-k; the vectors are unit length, so cosine is
 * a dot product. */
int chunks_search_vectors(struct store *s, const struct store_tenant *t, const float *q, size_t dim,
                          const struct store_search_filter *f, unsigned limit, struct arena *a,
                          struct store_hit **out, size_t *n)
{
    struct db_stmt *st;
    int64_t *best_row;
    double *best;
    size_t have = 0;
    bool row = false;
    int rc;

    *n = 0;
    *out = arena_alloc(a, ((size_t)limit + 1) * sizeof(**out));
    best_row = arena_alloc(a, ((size_t)limit + 1) * sizeof(*best_row));
    best = arena_alloc(a, ((size_t)limit + 1) * sizeof(*best));
    if (db_dialect(s) == DB_POSTGRES)
        st = db_prepare(s, "SELECT c.rowid, c.embedding FROM chunks c JOIN documents d ON d.id ="
                           " c.document_id WHERE c.org_id = $1 AND c.mode = $2 AND d.status ="
                           " 'ready' AND c.embedding IS NOT NULL" PG_RULES_34);
    else
        st = db_prepare(s, "SELECT c.rowid, c.embedding FROM chunks c JOIN documents d ON d.id ="
                           " c.document_id WHERE c.org_id = $1 AND c.mode = $2 AND d.status ="
                           " 'ready' AND c.embedding IS NOT NULL" SQ_RULES_34);
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, f->tags_json);
    db_bind_text(st, 4, f->employee_id);
    while (!(rc = db_step(st, &row)) && row) {
        size_t len, pos;
        const float *v = db_blob(st, 1, &len);
        double dot = 0;
        if (!v || len != dim * sizeof(float))
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
        best_row[pos] = db_int64(st, 0);
    }
    db_done(st);
    if (rc)
        return rc;
    return chunks_hits_by_rowid(s, best_row, best, have, a, out, n);
}

/* ---- Vectors kept up to date ---- */

/* See store_int.h. */
int chunks_stale(struct store *s, const char *model, int64_t after, unsigned limit, struct arena *a,
                 struct store_stale_chunk **out, size_t *n)
{
    /* Three ranges of chunks_by_model, not a scan: NULL, below and above 'model'. */
    struct db_stmt *st = db_prepare(s, "SELECT c.rowid, c.content, c.org_id, c.mode FROM chunks c"
                                       " JOIN documents d ON d.id = c.document_id WHERE"
                                       " (c.embed_model IS NULL OR c.embed_model < $1 OR"
                                       " c.embed_model > $1) AND c.rowid > $2 AND"
                                       " d.status = 'ready' ORDER BY c.rowid LIMIT $3");
    bool row = false;
    int rc;
    *n = 0;
    *out = arena_alloc(a, ((size_t)limit + 1) * sizeof(**out));
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, model);
    db_bind_int64(st, 2, after);
    db_bind_int64(st, 3, limit);
    while (!(rc = db_step(st, &row)) && row && *n < limit) {
        struct store_stale_chunk *c = &(*out)[(*n)++];
        c->rowid = db_int64(st, 0);
        c->content = db_arena_text(a, st, 1);
        db_copy(st, 2, c->tenant.org_id, sizeof(c->tenant.org_id));
        c->tenant.mode = db_mode(db_text(st, 3));
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int chunks_set_vectors(struct store *s, const int64_t *rowids, size_t n, const float *vecs,
                       size_t dim, const char *model)
{
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    for (size_t i = 0; !rc && i < n; i++) {
        struct db_stmt *st =
            db_prepare(s, "UPDATE chunks SET embedding = $1, embed_model = $2 WHERE rowid = $3");
        if (!st) {
            rc = ERR_STORE;
            break;
        }
        db_bind_blob(st, 1, vecs + i * dim, dim * sizeof(float));
        db_bind_text(st, 2, model);
        db_bind_int64(st, 3, rowids[i]);
        rc = db_exec(st);
        if (!rc)
            rc = touch_tenant_of(s,
                                 "INSERT INTO tenant_versions (org_id, mode, knowledge) SELECT"
                                 " org_id, mode, 1 FROM chunks WHERE rowid = $1 ON CONFLICT"
                                 " (org_id, mode) DO UPDATE SET knowledge ="
                                 " tenant_versions.knowledge + 1",
                                 NULL, rowids[i]);
    }
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}
