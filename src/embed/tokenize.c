/* SPDX-License-Identifier: MIT */
/*
 * tokenize: text -> SentencePiece ids, exactly as the package's JavaScript tokenizer
 * (@energetic-ai/embeddings 0.2.0, lib/tokenizer.ts) does it, so that the C model sees the
 * same ids as the reference:
 *
 *   1. UTF-8 -> code points (invalid bytes read as U+FFFD, as a WHATWG decoder does), then
 *      NFKC (libunistring);
 *   2. a non-empty result gets U+2581 in front, and every U+0020 becomes U+2581;
 *   3. Viterbi over code points: at each position every vocabulary piece that starts there
 *      is an edge scored by its log-probability; a position where none starts gets the
 *      unknown id 0 with length 1 and score 0. The package's quirks are kept on purpose:
 *      a best score of exactly 0 counts as "unset" (any candidate replaces it), and ties go
 *      to the later candidate (a later start, i.e. the shorter piece);
 *   4. walk back from the end (an unknown id steps back one code point: the package steps by
 *      the length of piece 0, which is "\uFFFD" in the real vocabulary), then collapse each
 *      run of unknown ids into one. A piece steps back by its code points (the package counts
 *      UTF-16 units, which differ only for pieces outside the BMP: the real vocabulary has
 *      none).
 *
 * DESIGN. The model reads only the first 128 ids, and the text may be long. No piece of the
 * real vocabulary has U+2581 after its first code point, so every U+2581 is a boundary that
 * every segmentation passes through, and what comes before it does not depend on what comes
 * after. So the forward pass stops at the first U+2581 past max * (longest piece), walks back
 * from there, and goes further (doubling the limit) only when collapsed unknown runs left
 * fewer than 'max' ids. A vocabulary without that property is always run to the end.
 *
 * The vocabulary is a trie over code points whose edges live in one hash table; it is
 * read-only after embed_vocab_init(), so threads share it. Pure: no globals, no I/O; the
 * scratch memory of a call is sized by its input and released before it returns.
 */
#include "embed_int.h"

#include "../core/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uninorm.h>

#define SEP 0x2581u  /* SentencePiece's word boundary, "▁" */
#define REPL 0xFFFDu /* replacement character */

/* ---- UTF-8 ---- */

/*
 * Decode 's' into 'out' (room for 'len' code points). Invalid input becomes U+FFFD per
 * maximal subpart, as the WHATWG decoder (and so Node's Buffer.toString) does. Returns the
 * count.
 */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *out)
{
    size_t i = 0, n = 0;

    while (i < len) {
        unsigned c = s[i], lo = 0x80, hi = 0xBF;
        size_t need, k, j;
        uint32_t cp;

        if (c < 0x80) {
            out[n++] = c;
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            out[n++] = REPL;
            i++;
            continue;
        }
        /* The bytes that fit are consumed; the one that does not starts the next round. */
        for (k = 0, j = i + 1; k < need && j < len; k++, j++) {
            unsigned b = s[j];
            if (b < lo || b > hi)
                break;
            lo = 0x80;
            hi = 0xBF;
            cp = (cp << 6) | (b & 0x3F);
        }
        out[n++] = k == need ? cp : REPL;
        i = j;
    }
    return n;
}

/* ---- The trie ---- */

static uint64_t edge_key(uint32_t parent, uint32_t cp)
{
    return (((uint64_t)parent << 21) | cp) + 1;
}

static size_t edge_slot(uint64_t key, size_t mask)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29)) & mask;
}

/* The child of 'node' along 'cp', or 0 (the root is nobody's child). */
static uint32_t child_of(const struct embed_vocab *v, uint32_t node, uint32_t cp)
{
    uint64_t key = edge_key(node, cp);
    size_t i = edge_slot(key, v->edge_mask_);

    while (v->edge_keys_[i]) {
        if (v->edge_keys_[i] == key)
            return v->edge_child_[i];
        i = (i + 1) & v->edge_mask_;
    }
    return 0;
}

/* The child of 'node' along 'cp', created when missing. */
static uint32_t child_add(struct embed_vocab *v, uint32_t node, uint32_t cp)
{
    uint64_t key = edge_key(node, cp);
    size_t i = edge_slot(key, v->edge_mask_);
    uint32_t c;

    while (v->edge_keys_[i]) {
        if (v->edge_keys_[i] == key)
            return v->edge_child_[i];
        i = (i + 1) & v->edge_mask_;
    }
    c = (uint32_t)v->nnodes_++;
    v->nodes_[c].id = -1;
    v->nodes_[c].score = 0;
    v->edge_keys_[i] = key;
    v->edge_child_[i] = c;
    return c;
}

/*
 * Build the vocabulary 'v' from the 'n' pieces 'p' (piece i is id i; ids below 'reserved' are
 * not matched, as the package skips them). The pieces are copied: 'p' may go away after the
 * call. Returns 0, or ERR_INVALID when there are too many pieces or code points for the
 * 32-bit node ids. The caller releases 'v' with embed_vocab_cleanup().
 */
int embed_vocab_init(struct embed_vocab *v, const struct embed_piece *p, size_t n, size_t reserved,
                     struct err *e)
{
    size_t total = 0, longest = 0, slots = 16;
    uint32_t *cps = NULL;

    memset(v, 0, sizeof(*v));
    if (n > INT32_MAX)
        return err_set(e, ERR_INVALID, "invalid_setting", NULL, "too many vocabulary pieces");
    for (size_t i = 0; i < n; i++) {
        total += p[i].len; /* code points <= bytes */
        if (p[i].len > longest)
            longest = p[i].len;
    }
    if (total >= UINT32_MAX / 2)
        return err_set(e, ERR_INVALID, "invalid_setting", NULL, "vocabulary too large");
    while (slots < 2 * total)
        slots *= 2;
    v->nodes_ = xcalloc(total + 1, sizeof(*v->nodes_));
    v->nodes_[0].id = -1;
    v->nnodes_ = 1;
    v->edge_keys_ = xcalloc(slots, sizeof(*v->edge_keys_));
    v->edge_child_ = xcalloc(slots, sizeof(*v->edge_child_));
    v->edge_mask_ = slots - 1;
    v->piece_len_ = xcalloc(n ? n : 1, sizeof(*v->piece_len_));
    v->npieces_ = n;
    cps = xmalloc((longest ? longest : 1) * sizeof(*cps));

    for (size_t i = 0; i < n; i++) {
        size_t m = utf8_decode((const unsigned char *)p[i].s, p[i].len, cps);
        uint32_t node = 0;

        v->piece_len_[i] = (uint32_t)m;
        if (i < reserved || m == 0)
            continue;
        for (size_t j = 0; j < m; j++) {
            if (j > 0 && cps[j] == SEP)
                v->sep_inner_ = true;
            node = child_add(v, node, cps[j]);
        }
        v->nodes_[node].id = (int32_t)i;
        v->nodes_[node].score = p[i].score;
        if (m > v->max_piece_len_)
            v->max_piece_len_ = m;
    }
    free(cps);
    return 0;
}

/* Release what embed_vocab_init() allocated; 'v' is empty again. */
void embed_vocab_cleanup(struct embed_vocab *v)
{
    if (!v)
        return;
    free(v->nodes_);
    free(v->edge_keys_);
    free(v->edge_child_);
    free(v->piece_len_);
    memset(v, 0, sizeof(*v));
}

/* ---- Viterbi ---- */

/* The package's update rule: 0 means "unset", and ties go to the later candidate. */
static void relax(double *best, int32_t *words, size_t end, double score, int32_t id)
{
    if (best[end] == 0 || score >= best[end]) {
        best[end] = score;
        words[end] = id;
    }
}

/* Apply every edge that starts at position 'i' of 'sym' (of length 'nsym'). */
static void relax_from(const struct embed_vocab *v, const uint32_t *sym, size_t nsym, size_t i,
                       double *best, int32_t *words)
{
    double base = best[i];
    uint32_t node = 0;
    bool any = false;

    for (size_t j = i; j < nsym; j++) {
        const struct embed_trie_node *t;
        node = child_of(v, node, sym[j]);
        if (!node)
            break;
        t = &v->nodes_[node];
        if (t->id >= 0) {
            any = true;
            relax(best, words, j + 1, t->score + base, t->id);
        }
    }
    if (!any)
        relax(best, words, i + 1, 0.0 + base, 0);
}

/*
 * Walk back from position 'end', then write the collapsed ids in text order: the first 'max'
 * to 'ids'. 'rev' has room for 'end' ids. Returns how many collapsed ids there are in all.
 */
static size_t backtrack(const struct embed_vocab *v, const int32_t *words, size_t end, int32_t *rev,
                        int *ids, size_t max)
{
    size_t k = 0, count = 0;
    bool prev_unk = false;

    while (end > 0) {
        int32_t id = words[end];
        size_t step = id > 0 ? v->piece_len_[id] : 1;
        rev[k++] = id;
        end = step > end ? 0 : end - step;
    }
    while (k-- > 0) {
        int32_t id = rev[k];
        if (id == 0 && prev_unk)
            continue;
        prev_unk = id == 0;
        if (count < max)
            ids[count] = id;
        count++;
    }
    return count;
}

static size_t sat_mul(size_t a, size_t b)
{
    return b && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/*
 * Tokenize the 'len' bytes of 'text' with the vocabulary 'v'. The first 'max' ids go to 'ids'
 * and their count to '*n'. Returns 0, or ERR_NOMEM when the scratch memory (about 30 bytes
 * per input byte) cannot be had.
 */
int embed_vocab_encode(const struct embed_vocab *v, const char *text, size_t len, int *ids,
                       size_t max, size_t *n)
{
    uint32_t *cps = NULL, *norm = NULL, *sym = NULL;
    double *best = NULL;
    int32_t *words = NULL, *rev = NULL;
    size_t ncp, nnorm = 0, nsym, done = 0, count = 0, limit;
    int rc = 0;

    if (len == 0 || max == 0)
        goto out;
    if (len > SIZE_MAX / 16) {
        rc = ERR_NOMEM;
        goto out;
    }
    cps = mem_try_alloc(len * sizeof(*cps));
    if (!cps) {
        rc = ERR_NOMEM;
        goto out;
    }
    ncp = utf8_decode((const unsigned char *)text, len, cps);
    norm = u32_normalize(UNINORM_NFKC, cps, ncp, NULL, &nnorm);
    if (!norm) {
        rc = ERR_NOMEM; /* ENOMEM: the input holds only valid scalar values */
        goto out;
    }
    if (nnorm == 0)
        goto out;

    nsym = nnorm + 1;
    sym = mem_try_alloc(nsym * sizeof(*sym));
    best = mem_try_alloc((nsym + 1) * sizeof(*best));
    words = mem_try_alloc((nsym + 1) * sizeof(*words));
    rev = mem_try_alloc(nsym * sizeof(*rev));
    if (!sym || !best || !words || !rev) {
        rc = ERR_NOMEM;
        goto out;
    }
    sym[0] = SEP;
    for (size_t i = 0; i < nnorm; i++)
        sym[i + 1] = norm[i] == ' ' ? SEP : norm[i];
    for (size_t i = 0; i <= nsym; i++) {
        best[i] = 0;
        words[i] = 0;
    }

    limit = sat_mul(max, v->max_piece_len_ ? v->max_piece_len_ : 1);
    for (;;) {
        size_t end = nsym;
        if (!v->sep_inner_ && limit < nsym) {
            end = limit;
            while (end < nsym && sym[end] != SEP)
                end++;
        }
        /* Edges from before 'end' cannot pass a U+2581 at 'end': the pass is incremental. */
        for (; done < end; done++)
            relax_from(v, sym, nsym, done, best, words);
        count = backtrack(v, words, end, rev, ids, max);
        if (count >= max || end == nsym)
            break;
        limit = sat_mul(limit, 2);
    }

out:
    free(cps);
    free(norm);
    free(sym);
    free(best);
    free(words);
    free(rev);
    *n = rc ? 0 : (count < max ? count : max);
    return rc;
}
