/* SPDX-License-Identifier: MIT */
/*
 * pool: where embeddings are computed, off the request threads. Callers hand it a batch of
 * texts and get the vectors back in a callback; the provider behind it is either the built-in
 * model (model.c), run by the pool's own threads, or an OpenAI-compatible `/embeddings`
 * endpoint (openai.c), one HTTP call per batch through httpc.
 *
 * Two lanes: a query (a search, a chat message) is interactive and goes before any queued
 * document batch; with more than one thread, document batches never take the last free one,
 * so a query waits for no document. Every vector of one pool has the same width and the same
 * model name (embed_pool_model()), which the store keeps with each chunk.
 */
#ifndef WORKFORCE_EMBED_POOL_H
#define WORKFORCE_EMBED_POOL_H

#include "../core/err.h"

#include <stdbool.h>
#include <stddef.h>

struct embed_model;
struct embed_pool;
struct httpc;

#define EMBED_POOL_BATCH 16     /* texts per job of embed_pool_embed_all() */
#define EMBED_POOL_MAX_DIM 4096 /* widest vector a provider may return */

struct embed_pool_options {
    const char *provider; /* "builtin" or "openai" */
    unsigned threads;     /* >= 1: they compute (builtin) or deliver the answers (openai) */
    /* builtin: a loaded model (borrowed; outlives the pool), or the package directory and the
     * weight cache to load it from when the first job comes (the pool owns that copy) */
    const struct embed_model *model;
    const char *model_dir, *model_cache;
    /* openai */
    struct httpc *httpc; /* borrowed */
    const char *base_url, *api_key, *model_name;
    long timeout_ms, connect_timeout_ms;
    int retries;
};

/*
 * The end of a job: rc 0 with 'n' vectors of 'dim' floats in 'vecs' (valid during the call
 * only), or an error code with 'e' saying why. Runs on a pool thread (either provider), or on
 * the caller's when the pool is stopping.
 */
typedef void (*embed_done_fn)(void *ud, int rc, const float *vecs, size_t n, size_t dim,
                              const struct err *e);

int embed_pool_new(const struct embed_pool_options *o, struct embed_pool **out, struct err *e);
/* Finish the jobs under way, fail the queued ones (ERR_INTERNAL), stop. NULL is a no-op. */
void embed_pool_free(struct embed_pool *p);

/* "use-lite-512" for the built-in model, "openai:<model>" otherwise. */
const char *embed_pool_model(const struct embed_pool *p);

/*
 * Queue the 'n' texts (copied) for embedding; 'done' is called exactly once, possibly before
 * this returns (a stopped pool). 'interactive': a query, served before document batches.
 */
int embed_pool_submit(struct embed_pool *p, bool interactive, const char *const *texts,
                      const size_t *lens, size_t n, embed_done_fn done, void *ud);

/*
 * Blocking, for background threads only: embed 'n' texts in batches of EMBED_POOL_BATCH, all
 * queued at once, and wait. '*vecs' (n x '*dim' floats) is owned by the caller.
 */
int embed_pool_embed_all(struct embed_pool *p, const char *const *texts, const size_t *lens,
                         size_t n, float **vecs, size_t *dim, struct err *e);

/* Scale the 'dim' floats of 'v' to unit length; a zero vector stays zero. */
void embed_vec_normalise(float *v, size_t dim);

/* The dot product of two vectors of 'dim' floats: their cosine when both are unit length. */
double embed_vec_dot(const float *a, const float *b, size_t dim);

#endif
