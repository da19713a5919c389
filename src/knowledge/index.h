/* SPDX-License-Identifier: MIT */
/*
 * index: the in-memory vector index of the knowledge base. Per tenant, the embeddings of every
 * searchable chunk sit in one contiguous float array with each row's document, so a query is
 * one sequential scan (no database reads) followed by reading the few winning rows. A tenant's
 * index is loaded on its first query and dropped when one of its documents is finished or
 * deleted (the next query loads it again).
 */
#ifndef WORKFORCE_KNOWLEDGE_INDEX_H
#define WORKFORCE_KNOWLEDGE_INDEX_H

#include "../store/store.h"

#include <stdbool.h>

struct kindex;

/*
 * Only vectors made by 'model' (embed_pool_model()) are searched; NULL: any. With 'int8', each
 * row is kept as 8-bit integers and one scale (a quarter of the memory; the cosine is then
 * approximate: see the retrieval figures in `make test`'s test_retrieval).
 */
struct kindex *kindex_new(const char *model, bool int8);
void kindex_free(struct kindex *k); /* NULL is a no-op */
/* The tenant's documents changed: its index is rebuilt by the next search. */
void kindex_invalidate(struct kindex *k, const struct store_tenant *t);
/* The 'limit' chunks closest to 'q' among those 'f' allows; hits read through 's'. */
int kindex_search(struct kindex *k, struct store *s, const struct store_tenant *t, const float *q,
                  size_t dim, const struct store_search_filter *f, unsigned limit, struct arena *a,
                  struct store_hit **out, size_t *n);
size_t kindex_bytes(struct kindex *k); /* memory held, for the benchmark and metrics */
/* The tenant's searchable chunks and those with a vector (loading its index). */
int kindex_counts(struct kindex *k, struct store *s, const struct store_tenant *t, size_t *chunks,
                  size_t *vectors);

#endif
