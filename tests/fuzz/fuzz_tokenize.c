/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tokenize: the embedding tokenizer (embed/tokenize.c), a pure function of (vocabulary,
 * text), on vocabularies built here (no model files needed). The input:
 *
 *     byte 0   'max', the number of ids asked for in the cut run (0-255)
 *     then     either VOCAB "\0\0" TEXT: a vocabulary of our own, pieces separated by '\n'
 *              (ids from 6 on, scores from a fixed cycle that includes 0 and a positive one),
 *              or just TEXT with the built-in vocabulary below
 *
 * Checks:
 *   1. embed_vocab_encode() returns 0; every id is 0 or a matchable piece (never 1-5); no two
 *      unknown ids (0) in a row; the count is at most 'max'.
 *   2. The cut run's ids are exactly the first ids of a run that asks for all of them (the
 *      bounded, incremental pass agrees with the whole one).
 *   3. When the text and every piece are valid UTF-8: the ids equal those of an independent
 *      reference, written the way the package's JavaScript is (libunistring's decoder, a
 *      linear scan of the pieces instead of the trie, the whole text at once).
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/err.h"
#include "../../src/embed/embed_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>
#include <uninorm.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_tokenize: check failed at line %d: %s\n", __LINE__, #c);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define SEP 0x2581u
#define MAX_PIECES 256

/* The built-in vocabulary: reserved ids, then pieces in the real one's style. */
/* clang-format off */
static const char *const builtin[] = {
    "\uFFFD", "<s>", "</s>", "e1", "e2", "e3", /* 0-5 */
    "\u2581", "\u2581the", "\u2581a", "\u2581caf", "\u00E9", "e", "s", ".", ",", "ing", "th", "he",
    "the", "t", "h", "a", "\u2581th", "fi", "\u2581:)", ":", "::", "30", ":30", "\u2581\u2581",
    "ab", "abc", "bc", "c", "b", "\u201D", "5", "\u201D5", "\u201D5", "\U0001F600", "\u2581\u03B1",
};
/* clang-format on */

static const double score_cycle[8] = {-1.5, -3, 0, -0.25, 2, -7, -3, -1e-3};

/* ---- The reference: the package's algorithm, written out plainly ---- */

struct ref_piece {
    uint32_t *cp;
    size_t n;
    double score;
    int id;
};

/*
 * Tokenize the valid UTF-8 'text' as lib/tokenizer.ts does, with 'np' pieces (ids 'reserved'..
 * matchable, a later duplicate replacing an earlier one). '*out' gets the collapsed ids
 * (malloc'd); returns their count.
 */
static size_t ref_encode(const struct embed_piece *p, size_t np, size_t reserved,
                         const uint8_t *text, size_t len, int **out)
{
    struct ref_piece *rp = calloc(np ? np : 1, sizeof(*rp));
    size_t nrp = 0, ncp = 0, nn = 0, nsym, count = 0, k = 0, longest = 1, *ncand;
    struct ref_piece *cand;
    uint32_t *cps, *norm, *sym;
    double *best;
    int *words, *rev, *ids;

    CHECK(rp);
    for (size_t i = reserved; i < np; i++) {
        size_t n = 0;
        uint32_t *cp = u8_to_u32((const uint8_t *)p[i].s, p[i].len, NULL, &n);
        CHECK(cp);
        if (n == 0) {
            free(cp);
            continue;
        }
        /* A later identical piece replaces this one. */
        for (size_t j = 0; j < nrp; j++) {
            if (rp[j].n == n && memcmp(rp[j].cp, cp, n * 4) == 0) {
                free(rp[j].cp);
                rp[j] = rp[--nrp];
                break;
            }
        }
        rp[nrp++] = (struct ref_piece){cp, n, p[i].score, (int)i};
    }

    *out = NULL;
    cps = u8_to_u32(text, len, NULL, &ncp);
    CHECK(cps || len == 0);
    norm = ncp ? u32_normalize(UNINORM_NFKC, cps, ncp, NULL, &nn) : NULL;
    free(cps);
    if (nn == 0) {
        free(norm);
        for (size_t j = 0; j < nrp; j++)
            free(rp[j].cp);
        free(rp);
        return 0;
    }
    nsym = nn + 1;
    sym = malloc(nsym * 4);
    best = calloc(nsym + 1, sizeof(*best));
    words = calloc(nsym + 1, sizeof(*words));
    rev = malloc(nsym * sizeof(*rev));
    ids = malloc(nsym * sizeof(*ids));
    CHECK(sym && best && words && rev && ids);
    sym[0] = SEP;
    for (size_t i = 0; i < nn; i++)
        sym[i + 1] = norm[i] == ' ' ? SEP : norm[i];
    free(norm);

    /*
     * As the JS does: first every candidate of every start (the matching pieces, or the
     * unknown id when none matches), then the end positions in order, each with its
     * candidates in order of their start.
     */
    cand = calloc(nsym * (nrp + 1), sizeof(*cand));
    ncand = calloc(nsym, sizeof(*ncand));
    CHECK(cand && ncand);
    for (size_t start = 0; start < nsym; start++) {
        struct ref_piece *c = cand + start * (nrp + 1);
        for (size_t j = 0; j < nrp; j++) {
            if (start + rp[j].n <= nsym && memcmp(sym + start, rp[j].cp, rp[j].n * 4) == 0) {
                c[ncand[start]++] = rp[j];
                if (rp[j].n > longest)
                    longest = rp[j].n;
            }
        }
        if (ncand[start] == 0)
            c[ncand[start]++] = (struct ref_piece){NULL, 1, 0, 0};
    }
    for (size_t end = 1; end <= nsym; end++) {
        for (size_t start = end > longest ? end - longest : 0; start < end; start++) {
            for (size_t j = 0; j < ncand[start]; j++) {
                const struct ref_piece *c = &cand[start * (nrp + 1) + j];
                double s;
                if (start + c->n != end)
                    continue;
                s = c->score + best[start];
                if (best[end] == 0 || s >= best[end]) {
                    best[end] = s;
                    words[end] = c->id;
                }
            }
        }
    }
    free(cand);
    free(ncand);
    for (size_t it = nsym; it > 0;) {
        int id = words[it];
        size_t step = 1;
        for (size_t j = 0; id && j < nrp; j++)
            if (rp[j].id == id)
                step = rp[j].n;
        rev[k++] = id;
        it = step > it ? 0 : it - step;
    }
    for (bool prev = false; k-- > 0;) {
        if (rev[k] == 0 && prev)
            continue;
        prev = rev[k] == 0;
        ids[count++] = rev[k];
    }
    for (size_t j = 0; j < nrp; j++)
        free(rp[j].cp);
    free(rp);
    free(sym);
    free(best);
    free(words);
    free(rev);
    *out = ids;
    return count;
}

/* ---- The target ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct embed_piece pieces[MAX_PIECES + 6];
    struct embed_vocab v;
    const uint8_t *text;
    size_t max, len, np = 0, nall = 0, ncut = 0, nref;
    int *all, *cut, *ref = NULL;
    bool valid;

    if (size < 1 || size > 4096)
        return 0;
    max = data[0];
    text = data + 1;
    len = size - 1;
    {
        const uint8_t *sep = NULL;
        for (size_t i = 0; i + 1 < len; i++) {
            if (text[i] == 0 && text[i + 1] == 0) {
                sep = text + i;
                break;
            }
        }
        if (sep) {
            const uint8_t *s = text, *end = sep;
            for (; np < 6; np++)
                pieces[np] = (struct embed_piece){builtin[np], strlen(builtin[np]), 0};
            while (s < end && np < MAX_PIECES) {
                const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
                size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
                if (n > 0) {
                    pieces[np] = (struct embed_piece){(const char *)s, n, score_cycle[np % 8]};
                    np++;
                }
                s += n + 1;
            }
            len -= (size_t)(sep + 2 - text);
            text = sep + 2;
        } else {
            for (; np < sizeof(builtin) / sizeof(builtin[0]); np++)
                pieces[np] = (struct embed_piece){builtin[np], strlen(builtin[np]),
                                                  np < 6 ? 0 : score_cycle[np % 8]};
        }
    }
    CHECK(embed_vocab_init(&v, pieces, np, EMBED_RESERVED_IDS, NULL) == 0);

    all = malloc((len + 2) * sizeof(*all));
    cut = malloc((max + 1) * sizeof(*cut));
    CHECK(all && cut);
    CHECK(embed_vocab_encode(&v, (const char *)text, len, all, len + 2, &nall) == 0);
    CHECK(embed_vocab_encode(&v, (const char *)text, len, cut, max, &ncut) == 0);

    /* 1. The shape of the ids. */
    CHECK(nall <= len + 1);
    for (size_t i = 0; i < nall; i++) {
        CHECK(all[i] == 0 || (all[i] >= EMBED_RESERVED_IDS && (size_t)all[i] < np));
        CHECK(!(i > 0 && all[i] == 0 && all[i - 1] == 0));
    }
    /* 2. The cut run is a prefix of the whole one. */
    CHECK(ncut == (nall < max ? nall : max));
    CHECK(ncut == 0 || memcmp(cut, all, ncut * sizeof(*cut)) == 0);

    /* 3. The reference, when everything is valid UTF-8. */
    valid = u8_check(text, len) == NULL;
    for (size_t i = 0; valid && i < np; i++)
        valid = u8_check((const uint8_t *)pieces[i].s, pieces[i].len) == NULL;
    if (valid && len <= 1024) {
        nref = ref_encode(pieces, np, EMBED_RESERVED_IDS, text, len, &ref);
        if (nref != nall || (nref && memcmp(ref, all, nref * sizeof(*ref)) != 0)) {
            fprintf(stderr, "fuzz_tokenize: %zu ids, the reference %zu\n", nall, nref);
            for (size_t i = 0; i < nall || i < nref; i++)
                fprintf(stderr, "  %zu: %d %d\n", i, i < nall ? all[i] : -1,
                        i < nref ? ref[i] : -1);
            abort();
        }
        free(ref);
    }

    free(all);
    free(cut);
    embed_vocab_cleanup(&v);
    return 0;
}
