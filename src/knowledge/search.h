/* SPDX-License-Identifier: MIT */
/*
 * search: knowledge search (contract §11), one implementation for the query endpoint, chat,
 * task runs and workflow steps. BM25 through FTS5 and cosine over the chunk embeddings,
 * fused by reciprocal rank. Callable without an HTTP request: it needs only the services
 * below, a tenant and a store handle.
 */
#ifndef WORKFORCE_KNOWLEDGE_SEARCH_H
#define WORKFORCE_KNOWLEDGE_SEARCH_H

#include "../core/err.h"
#include "../core/mem.h"
#include "../json/json.h"
#include "../store/store.h"

#include <stddef.h>

struct embed_pool;
struct kindex;

/* What a search runs on; every member is borrowed and outlives the searches. */
struct knowledge_services {
    struct store_pool *pool;  /* handles for searches finished off the caller's thread */
    struct embed_pool *embed; /* NULL: no query vectors (BM25 only) */
    struct kindex *kindex;    /* NULL: vectors read from the store */
};

/* A search to run, its strings borrowed until knowledge_search_start() returns. */
struct knowledge_query {
    const struct knowledge_services *ks;
    struct store_tenant tenant;
    const char *query;
    struct store_search_filter filter;
    unsigned limit;
    double min_cosine; /* vector candidates below it are dropped; -1 keeps all */
};

/* The hits (valid during the call; 's' is a store handle the callback may use), or an error. */
typedef void (*knowledge_search_fn)(void *ud, int rc, struct store *s, const struct store_hit *hits,
                                    size_t n, const struct err *e);

/* The hits as the query endpoint shows them: an array of {document_id, document_name,
 * chunk_id, content, score, tags, page?}. */
void knowledge_write_hits(struct jw *w, const struct store_hit *hits, size_t n);

/* An FTS5 query of the meaningful words of 'q' that can never be a syntax error; NULL: none. */
char *knowledge_fts_query(struct arena *a, const char *q);

/* Hybrid search with the query's vector 'qvec' ('dim' floats; NULL: words only). */
int knowledge_search(const struct knowledge_services *ks, struct store *s,
                     const struct store_tenant *t, struct arena *a, const char *query,
                     const float *qvec, size_t dim, const struct store_search_filter *f,
                     unsigned limit, double min_cosine, struct store_hit **out, size_t *n,
                     struct err *e);

/*
 * Search, calling 'done' exactly once: before this returns when no query vector is needed
 * (through 's'), else on the embedding pool's thread once the vector is there.
 */
void knowledge_search_start(const struct knowledge_query *q, struct store *s,
                            knowledge_search_fn done, void *ud);

#endif
