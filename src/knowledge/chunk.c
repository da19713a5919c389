/* SPDX-License-Identifier: MIT */
/*
 * chunk.c: cutting an extracted text into the pieces the knowledge index embeds and returns
 * (contract §11: chunk_id, content, page). Pure: no I/O, no globals; fuzzed by
 * tests/fuzz/fuzz_chunk.c.
 *
 * DESIGN
 * Words are the unit: maximal runs of non-whitespace (space, TAB, LF, CR, FF, VT). A run
 * longer than WORD_MAX bytes (a base64 blob, a URL list without spaces) counts as several
 * words, cut at UTF-8 character boundaries, so that no chunk grows without bound in bytes.
 *
 * A paragraph break is a blank line (two line ends in the whitespace between two words) or a
 * form feed. A sentence ends at a word ending in '.', '!', '?', an ellipsis or the CJK full
 * stops, possibly followed by closing quotes or brackets, when the next word does not start
 * with a lower-case ASCII letter ("e.g. this" goes on), and at every paragraph break.
 *
 * Chunks are built greedily. Each chunk after the first opens with the last 'overlap' words
 * of the previous one (overlap is at most half the target, and a chunk never starts at or
 * before the previous chunk's start), then takes whole sentences while it stays within
 * 'target' words. It stops early at a paragraph break once it holds half the target, so a
 * chunk rarely straddles two topics; it takes one more sentence past the target while it
 * holds less than half of it; and a sentence longer than the chunk can hold is cut at word
 * boundaries. The last few words (under a quarter of the target) join the chunk before them.
 * So every chunk holds between 1 and target + target / 2 words, the chunks cover every word
 * in order, and each starts on a word: no chunk is empty or only whitespace.
 *
 * A chunk is the byte range from its first word's start to its last word's end, so it keeps
 * the text's own line breaks. Its page is the page holding its first byte, or 0 when the text
 * has no pages.
 */
#include "extract.h"

#include "../core/err.h"
#include "../core/mem.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Longest run of bytes that counts as one word. */
#define WORD_MAX 256

enum {
    W_PARA = 1,     /* a paragraph break comes before this word */
    W_SENT_END = 2, /* this word ends with sentence punctuation */
};

struct word {
    size_t off;
    uint32_t len;
    uint32_t flags;
};

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Whether the 'n' bytes at 'p' end with the string 's'. */
static bool ends_with(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s);

    return n >= k && memcmp(p + n - k, s, k) == 0;
}

/* Whether the word 'p' ('n' bytes) ends with sentence punctuation (see DESIGN). */
static bool sentence_punct(const char *p, size_t n)
{
    static const char *const closers[] = {"\"",
                                          "'",
                                          ")",
                                          "]",
                                          "}",
                                          "\xE2\x80\x99", /* ’ */
                                          "\xE2\x80\x9D" /* ” */,
                                          "\xC2\xBB" /* » */};
    static const char *const stops[] = {".",
                                        "!",
                                        "?",
                                        "\xE2\x80\xA6" /* … */,
                                        "\xE3\x80\x82" /* 。 */,
                                        "\xEF\xBC\x81" /* ！ */,
                                        "\xEF\xBC\x9F" /* ？ */};
    bool more = true;

    while (more && n > 0) {
        more = false;
        for (size_t i = 0; i < sizeof(closers) / sizeof(closers[0]); i++) {
            if (ends_with(p, n, closers[i])) {
                n -= strlen(closers[i]);
                more = true;
                break;
            }
        }
    }
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        if (ends_with(p, n, stops[i]))
            return true;
    }
    return false;
}

/*
 * Scan the words of 'text'; with 'w' NULL only count them. Returns the number of words; fills
 * 'w' (room for all of them) otherwise.
 */
static size_t scan_words(const char *text, size_t len, struct word *w)
{
    size_t i = 0, nw = 0;
    int newlines = 0;
    bool para = false;

    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        size_t start, end;

        if (is_space(c)) {
            if (c == '\n')
                newlines++;
            if (c == '\f' || newlines >= 2)
                para = true;
            i++;
            continue;
        }
        start = i;
        while (i < len && !is_space((unsigned char)text[i]) && i - start < WORD_MAX)
            i++;
        end = i;
        if (i < len && !is_space((unsigned char)text[i])) {
            /* Cut a long run before a UTF-8 continuation byte's character, if we can. */
            while (end > start + 1 && ((unsigned char)text[end] & 0xC0) == 0x80)
                end--;
            if (end == start + 1 && ((unsigned char)text[start + 1] & 0xC0) == 0x80)
                end = i; /* not UTF-8 anyway: cut at WORD_MAX */
            i = end;
        }
        if (w) {
            w[nw].off = start;
            w[nw].len = (uint32_t)(end - start);
            w[nw].flags = (para && nw > 0) ? W_PARA : 0;
            if (sentence_punct(text + start, end - start) &&
                (end == len || is_space((unsigned char)text[end])))
                w[nw].flags |= W_SENT_END;
        }
        nw++;
        newlines = 0;
        para = false;
    }
    return nw;
}

/* Whether a sentence ends after word 'i' (see DESIGN). */
static bool sentence_after(const struct word *w, size_t nw, const char *text, size_t i)
{
    unsigned char next;

    if (i + 1 >= nw || (w[i + 1].flags & W_PARA))
        return true;
    if (!(w[i].flags & W_SENT_END))
        return false;
    next = (unsigned char)text[w[i + 1].off];
    return !(next >= 'a' && next <= 'z');
}

/* The page holding byte 'off': the last page starting at or before it; 0 without pages. */
static int page_of(const struct extract_page *pages, size_t npages, size_t off)
{
    size_t lo = 0, hi = npages;

    if (npages == 0)
        return 0;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (pages[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return pages[lo].page;
}

/*
 * Split the 'len' bytes of 'text' into chunks of about 'target_words' words (at most 1.5
 * times that), each opening with up to 'overlap_words' words of the previous one (at most
 * half the target), along paragraphs and sentences (see DESIGN). 'pages' ('npages', sorted by
 * offset; may be NULL with 0) give each chunk its page. On success '*out' is a new array of
 * '*n' chunks (NULL and 0 for a text without words), freed by the caller with free().
 * Returns 0, ERR_INVALID when 'target_words' is 0, or ERR_NOMEM.
 */
int chunk_text(const char *text, size_t len, const struct extract_page *pages, size_t npages,
               unsigned target_words, unsigned overlap_words, struct chunk **out, size_t *n)
{
    struct word *w = NULL;
    struct chunk *chunks = NULL;
    size_t nw, count = 0, cap = 0, pos = 0, prev_start = 0;
    size_t target = target_words, limit = target_words + target_words / 2;
    size_t overlap = overlap_words < target_words / 2 ? overlap_words : target_words / 2;
    int rc = 0;

    if (target_words == 0) {
        rc = ERR_INVALID;
        goto out;
    }
    nw = scan_words(text, len, NULL);
    if (nw == 0)
        goto out;
    w = mem_try_alloc(nw * sizeof(*w));
    if (!w) {
        rc = ERR_NOMEM;
        goto out;
    }
    scan_words(text, len, w);

    while (pos < nw) {
        size_t start = 0, end = pos;

        if (count > 0) {
            start = pos > overlap ? pos - overlap : 0;
            if (start <= prev_start)
                start = prev_start + 1;
        }
        for (;;) {
            size_t have = end - start, s_end = end, sent;

            /* The sentence from 'end' on (looked at no further than the chunk could take). */
            while (s_end < nw && s_end - end <= limit && !sentence_after(w, nw, text, s_end))
                s_end++;
            s_end = s_end < nw ? s_end + 1 : nw;
            sent = s_end - end;
            if (have + sent <= target) {
                end = s_end;
                if (end >= nw || ((w[end].flags & W_PARA) && end - start >= target / 2))
                    break;
                continue;
            }
            if (end == pos) {
                /* Nothing new yet: the sentence whole if it fits, else cut at a word. */
                end = have + sent <= limit ? s_end : pos + (target > have ? target - have : 1);
            } else if (have < target / 2 && have + sent <= limit) {
                end = s_end;
            }
            break;
        }
        if (end < nw && nw - end <= target / 4 && nw - start <= limit)
            end = nw; /* a short tail joins this chunk */
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct chunk *nc = mem_try_alloc(ncap * sizeof(*nc));
            if (!nc) {
                rc = ERR_NOMEM;
                goto out;
            }
            if (count)
                memcpy(nc, chunks, count * sizeof(*nc));
            free(chunks);
            chunks = nc;
            cap = ncap;
        }
        chunks[count].off = w[start].off;
        chunks[count].len = w[end - 1].off + w[end - 1].len - w[start].off;
        chunks[count].page = page_of(pages, npages, w[start].off);
        count++;
        prev_start = start;
        pos = end;
    }
out:
    free(w);
    if (rc) {
        free(chunks);
        chunks = NULL;
        count = 0;
    }
    *out = chunks;
    *n = count;
    return rc;
}

/* See extract.h. */
size_t chunk_sentences(const char *text, size_t len, struct chunk *out, size_t max)
{
    size_t nw = scan_words(text, len, NULL), count = 0, first = 0;
    struct word *w;

    if (nw == 0)
        return 0;
    w = xcalloc(nw, sizeof(*w));
    scan_words(text, len, w);
    for (size_t i = 0; i < nw; i++) {
        if (!sentence_after(w, nw, text, i))
            continue;
        if (count < max) {
            out[count].off = w[first].off;
            out[count].len = w[i].off + w[i].len - w[first].off;
            out[count].page = 0;
        }
        count++;
        first = i + 1;
    }
    free(w);
    return count;
}
