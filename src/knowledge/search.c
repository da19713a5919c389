/* SPDX-License-Identifier: MIT */
/*
 * search.c: knowledge search (contract §11), for the query endpoint, chat, tasks and workflows.
 * BM25 through FTS5 and cosine over the chunk embeddings, each up to 50 candidates, fused by
 * reciprocal rank (k = 60); the fused score is scaled to [0, 1] by the best score a chunk
 * could reach with the methods that ran.
 *
 * DESIGN. The query's vector is computed by the embedding pool, never on a request thread:
 * knowledge_search_start() answers at once when no vector is needed (no chunks, no
 * vectors, no model) and otherwise hands the query to the pool, whose callback runs the
 * search on the pool's thread with a store handle of its own.
 */
#include "search.h"

#include "index.h"

#include "../core/buf.h"
#include "../core/log.h"
#include "../embed/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RRF_K 60.0
#define CANDIDATES 50
#define BM25_RELATIVE 0.5

/* Words that carry no meaning for search: matching them would make every document a hit. */
static const char *const stopwords[] = {
    "a",    "about", "after", "all",    "also", "am",    "an",    "and",   "any",  "are",
    "as",   "at",    "be",    "been",   "but",  "by",    "can",   "could", "did",  "do",
    "does", "for",   "from",  "get",    "had",  "has",   "have",  "he",    "her",  "here",
    "him",  "his",   "how",   "i",      "if",   "in",    "into",  "is",    "it",   "its",
    "just", "me",    "more",  "most",   "my",   "no",    "not",   "of",    "on",   "or",
    "our",  "out",   "she",   "should", "so",   "some",  "than",  "that",  "the",  "their",
    "them", "then",  "there", "these",  "they", "this",  "those", "to",    "up",   "us",
    "was",  "we",    "were",  "what",   "when", "where", "which", "who",   "whom", "why",
    "will", "with",  "would", "you",    "your", NULL};

static bool is_stopword(const char *w, size_t n)
{
    char low[16];
    if (n >= sizeof(low))
        return false;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] - 'A' + 'a' : w[i]);
    low[n] = '\0';
    for (size_t i = 0; stopwords[i]; i++) {
        if (strcmp(low, stopwords[i]) == 0)
            return true;
    }
    return false;
}

static bool word_byte(char c)
{
    return ((unsigned char)c & 0x80) || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

/*
 * The search terms of a query: its meaningful words (no stopwords), each whole, at most
 * FTS_TERM_MAX bytes (a longer "word" is noise and is skipped, never cut), distinct, and at
 * most FTS_TERMS of them: a chat message of any length makes a small query that stays valid.
 */
#define FTS_TERMS 64
#define FTS_TERM_MAX 64

struct terms {
    const char *p[FTS_TERMS];
    size_t len[FTS_TERMS];
    size_t n;
};

static void query_terms(const char *q, struct terms *t)
{
    const char *p = q;
    t->n = 0;
    while (*p && t->n < FTS_TERMS) {
        const char *start;
        size_t len;
        bool dup = false;
        while (*p && !word_byte(*p))
            p++;
        start = p;
        while (*p && word_byte(*p))
            p++;
        len = (size_t)(p - start);
        if (len == 0 || len > FTS_TERM_MAX || is_stopword(start, len))
            continue;
        for (size_t i = 0; i < t->n && !dup; i++)
            dup = t->len[i] == len && strncasecmp(t->p[i], start, len) == 0;
        if (dup)
            continue;
        t->p[t->n] = start;
        t->len[t->n++] = len;
    }
}

/*
 * An FTS5 query that can never be a syntax error: every search term quoted, joined by OR.
 * NULL when the query has no such term. At most FTS_TERMS * (FTS_TERM_MAX + 6) bytes.
 */
char *knowledge_fts_query(struct arena *a, const char *q)
{
    struct terms t;
    char *out, *o;
    query_terms(q, &t);
    if (!t.n)
        return NULL;
    out = o = arena_alloc(a, t.n * (FTS_TERM_MAX + 6) + 1);
    for (size_t i = 0; i < t.n; i++) {
        if (i) {
            memcpy(o, " OR ", 4);
            o += 4;
        }
        *o++ = '"';
        memcpy(o, t.p[i], t.len[i]);
        o += t.len[i];
        *o++ = '"';
    }
    *o = '\0';
    return out;
}

/* The search terms of 'q': how many, or how many of them 'content' holds (when not NULL). */
static size_t each_word(const char *q, const char *content)
{
    struct terms t;
    size_t n = 0;
    query_terms(q, &t);
    if (!content)
        return t.n;
    for (size_t i = 0; i < t.n; i++) {
        char stem[8];
        size_t k = t.len[i] < 5 ? t.len[i] : 5;
        memcpy(stem, t.p[i], k);
        stem[k] = '\0';
        if (strcasestr(content, stem))
            n++;
    }
    return n;
}

static size_t count_words(const char *q)
{
    return each_word(q, NULL);
}

static size_t matched_words(const char *q, const char *content)
{
    return each_word(q, content);
}

struct fused {
    const struct store_hit *hit;
    double score;
};

static int by_score(const void *a, const void *b)
{
    double x = ((const struct fused *)a)->score, y = ((const struct fused *)b)->score;
    return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * Search the tenant's knowledge: BM25 and, when 'qvec' is given, vectors, fused by reciprocal
 * rank. '*out' and '*n' hold at most 'limit' hits (in 'a'), best first, scores in [0, 1].
 */
int knowledge_search(const struct knowledge_services *ks, struct store *s,
                     const struct store_tenant *t, struct arena *a, const char *query,
                     const float *qvec, size_t dim, const struct store_search_filter *f,
                     unsigned limit, double min_cosine, struct store_hit **out, size_t *n,
                     struct err *e)
{
    struct store_hit *text = NULL, *vec = NULL;
    size_t nt = 0, nv = 0, nf = 0;
    struct fused *all;
    const char *fts = knowledge_fts_query(a, query);
    int methods = 0;
    int rc;

    *out = NULL;
    *n = 0;
    if (fts) {
        methods++;
        rc = store_search_text(s, t, fts, f, CANDIDATES, a, &text, &nt);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "text search failed");
        /* A weak lexical match would outrank a strong match by meaning in the fusion: keep
         * the hits within half of the best BM25 score that hold at least half of the
         * query's words (a 5-character prefix stands in for the stemmer). */
        {
            size_t kept = 0, words = count_words(query);
            for (size_t i = 0; i < nt; i++) {
                if (text[i].score < BM25_RELATIVE * text[0].score)
                    break;
                /* Without vectors, a weak lexical match is better than none. */
                if (!ks->embed || 2 * matched_words(query, text[i].content) >= words)
                    text[kept++] = text[i];
            }
            nt = kept;
        }
    }
    if (qvec) {
        methods++;
        rc = ks->kindex ? kindex_search(ks->kindex, s, t, qvec, dim, f, CANDIDATES, a, &vec, &nv)
                        : store_search_vectors(s, t, qvec, dim, f, CANDIDATES, a, &vec, &nv);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "vector search failed");
        while (nv > 0 && vec[nv - 1].score < min_cosine)
            nv--; /* best first: drop the tail below the threshold */
    }
    all = arena_alloc(a, (nt + nv + 1) * sizeof(*all));
    for (size_t i = 0; i < nt; i++) {
        all[nf].hit = &text[i];
        all[nf++].score = 1.0 / (RRF_K + (double)i + 1);
    }
    for (size_t i = 0; i < nv; i++) {
        size_t j;
        double rr = 1.0 / (RRF_K + (double)i + 1);
        for (j = 0; j < nf; j++) {
            if (strcmp(all[j].hit->chunk_id, vec[i].chunk_id) == 0)
                break;
        }
        if (j < nf) {
            all[j].score += rr;
        } else {
            all[nf].hit = &vec[i];
            all[nf++].score = rr;
        }
    }
    qsort(all, nf, sizeof(*all), by_score);
    if (nf > limit)
        nf = limit;
    *out = arena_alloc(a, (nf + 1) * sizeof(**out));
    for (size_t i = 0; i < nf; i++) {
        (*out)[i] = *all[i].hit;
        (*out)[i].score = methods ? all[i].score * (RRF_K + 1) / methods : 0;
    }
    *n = nf;
    return 0;
}

/* ---- Off the request thread ---- */

struct ksearch_job {
    struct knowledge_query q; /* strings copied into 'a' */
    struct arena a;
    knowledge_search_fn done;
    void *ud;
};

static void ksearch_vector(void *ud, int rc, const float *vecs, size_t n, size_t dim,
                           const struct err *pe)
{
    struct ksearch_job *j = ud;
    struct store *s = store_pool_get(j->q.ks->pool);
    struct store_hit *hits = NULL;
    size_t nh = 0;
    struct err e;

    err_clear(&e);
    if (rc || n != 1) {
        /* Without the query's vector the words still count. */
        log_warn("knowledge: the query embedding failed (%s); searching by words",
                 pe ? pe->msg : "no vector");
        vecs = NULL;
    }
    rc = knowledge_search(j->q.ks, s, &j->q.tenant, &j->a, j->q.query, vecs, dim, &j->q.filter,
                          j->q.limit, j->q.min_cosine, &hits, &nh, &e);
    j->done(j->ud, rc, s, hits, nh, rc ? &e : NULL);
    store_pool_put(j->q.ks->pool, s);
    arena_cleanup(&j->a);
    free(j);
}

/* Start a search of 'q'; see search.h. */
void knowledge_search_start(const struct knowledge_query *q, struct store *s,
                            knowledge_search_fn done, void *ud)
{
    size_t nchunks = 1, nvectors = 1;
    struct ksearch_job *j;
    struct err e;
    int rc = 0;

    err_clear(&e);
    /* Chat searches on every message: a tenant without searchable chunks (the in-memory index
     * knows) answers at once, and one without vectors needs no query embedding. */
    if (q->ks->kindex) {
        rc = kindex_counts(q->ks->kindex, s, &q->tenant, &nchunks, &nvectors);
        if (rc)
            err_set(&e, rc, "internal_error", NULL, "knowledge index failed");
    }
    if (rc || nchunks == 0 || !q->ks->embed || nvectors == 0) {
        struct arena a;
        struct store_hit *hits = NULL;
        size_t nh = 0;
        arena_init(&a);
        if (!rc && nchunks > 0)
            rc = knowledge_search(q->ks, s, &q->tenant, &a, q->query, NULL, 0, &q->filter, q->limit,
                                  q->min_cosine, &hits, &nh, &e);
        done(ud, rc, s, hits, nh, rc ? &e : NULL);
        arena_cleanup(&a);
        return;
    }
    j = xcalloc(1, sizeof(*j));
    arena_init(&j->a);
    j->q = *q;
    j->q.query = arena_strdup(&j->a, q->query);
    j->q.filter.tags_json = q->filter.tags_json ? arena_strdup(&j->a, q->filter.tags_json) : NULL;
    j->q.filter.employee_id =
        q->filter.employee_id ? arena_strdup(&j->a, q->filter.employee_id) : NULL;
    j->done = done;
    j->ud = ud;
    {
        const char *texts[1] = {j->q.query};
        size_t lens[1] = {strlen(j->q.query)};
        embed_pool_submit(q->ks->embed, true, texts, lens, 1, ksearch_vector, j);
    }
}

/* See search.h. */
void knowledge_write_hits(struct jw *w, const struct store_hit *hits, size_t n)
{
    jw_arr(w);
    for (size_t i = 0; i < n; i++) {
        char score[32];
        jw_obj(w);
        jw_key(w, "document_id");
        jw_str(w, hits[i].document_id);
        jw_key(w, "document_name");
        jw_str(w, hits[i].document_name);
        jw_key(w, "chunk_id");
        jw_str(w, hits[i].chunk_id);
        jw_key(w, "content");
        jw_str(w, hits[i].content);
        jw_key(w, "score");
        snprintf(score, sizeof(score), "%.6f", hits[i].score > 1 ? 1.0 : hits[i].score);
        jw_raw(w, score, "0");
        jw_key(w, "tags");
        jw_raw(w, hits[i].tags, "[]");
        if (hits[i].page > 0) {
            jw_key(w, "page");
            jw_int(w, hits[i].page);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
}
