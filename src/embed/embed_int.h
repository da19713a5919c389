/* SPDX-License-Identifier: MIT */
/*
 * embed_int.h: the tokenizer's vocabulary, private to src/embed/ (and reached by its unit test
 * and fuzz target). The tokenizer is a pure function of (vocabulary, text), so a test can
 * build a small vocabulary of its own instead of loading the model.
 */
#ifndef WORKFORCE_EMBED_INT_H
#define WORKFORCE_EMBED_INT_H

#include "../core/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The vocabulary's first ids are reserved (<unk>, <s>, </s>, 3 extras): never matched. */
#define EMBED_RESERVED_IDS 6

/* One vocabulary entry: its UTF-8 text and its log-probability (null in the file counts 0). */
struct embed_piece {
    const char *s;
    size_t len;
    double score;
};

struct embed_trie_node {
    double score; /* of the piece that ends here */
    int32_t id;   /* the piece's id, or -1 when no piece ends here */
};

/*
 * A vocabulary as a trie over code points: nodes in an array (0 is the root), edges in an
 * open-addressing hash table keyed by (parent node, code point). Members are private: use the
 * functions. Read-only after embed_vocab_init(), so it may be shared by threads.
 */
struct embed_vocab {
    struct embed_trie_node *nodes_;
    size_t nnodes_;
    uint64_t *edge_keys_; /* ((parent << 21) | cp) + 1; 0 = free slot */
    uint32_t *edge_child_;
    size_t edge_mask_;     /* table size - 1 (a power of two) */
    uint32_t *piece_len_;  /* code points of each id (for the backward pass) */
    size_t npieces_;       /* ids are 0 .. npieces_ - 1 */
    size_t max_piece_len_; /* longest piece, in code points */
    bool sep_inner_;       /* some piece has U+2581 after its first code point */
};

/*
 * Build 'v' from 'n' pieces; piece i gets id i, and ids below 'reserved' are never matched.
 * A piece given twice keeps the last id and score (as the package's trie does). Pieces must
 * be non-empty; invalid UTF-8 in a piece is read as U+FFFD. 0, or ERR_INVALID (too many
 * pieces). Free with embed_vocab_cleanup().
 */
int embed_vocab_init(struct embed_vocab *v, const struct embed_piece *p, size_t n, size_t reserved,
                     struct err *e);
void embed_vocab_cleanup(struct embed_vocab *v); /* frees; 'v' is empty again */

/*
 * Tokenize 'text' (any bytes: invalid UTF-8 reads as U+FFFD) and write the first 'max' ids
 * to 'ids', their count to '*n'. 0 or ERR_NOMEM. Pure: no globals, no I/O.
 */
int embed_vocab_encode(const struct embed_vocab *v, const char *text, size_t len, int *ids,
                       size_t max, size_t *n);

struct embed_model;

/* Test hook: make 'm' use the portable matrix kernel instead of the CPU's best one. */
void embed_model_force_portable(struct embed_model *m);

/* ---- openai.c: the OpenAI-compatible `/embeddings` provider of pool.c ---- */
struct embed_pool_options;
struct embed_openai;

/*
 * Parse an `/embeddings` answer for 'n' inputs: {"data": [{"index": i, "embedding": [...]}]},
 * each index 0..n-1 exactly once, every vector of the same width (1..max_dim), finite numbers.
 * '*vecs' (n x '*dim' floats, each L2-normalised) is owned by the caller. 0 or ERR_UPSTREAM
 * with the reason in 'e'. Pure: the fuzz target calls it.
 */
int embed_openai_parse(const char *body, size_t len, size_t n, size_t max_dim, float **vecs,
                       size_t *dim, struct err *e);
int embed_openai_new(const struct embed_pool_options *o, struct embed_openai **out, struct err *e);
void embed_openai_free(struct embed_openai *o); /* NULL is a no-op; no call may be under way */
/* One POST of the 'n' texts (copied into the request); 'done' as in pool.h, exactly once. */
void embed_openai_call(struct embed_openai *o, const char *const *texts, const size_t *lens,
                       size_t n,
                       void (*done)(void *ud, int rc, const float *vecs, size_t n, size_t dim,
                                    const struct err *e),
                       void *ud);

#endif
