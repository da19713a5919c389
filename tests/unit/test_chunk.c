/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of knowledge/chunk.c: chunks follow paragraphs, then sentences; they overlap by
 * the last words of the previous chunk; no chunk passes 1.5 times the target, even for one
 * endless sentence or one endless word; pages; allocation failures; and the invariants (in
 * order, covering every word, never empty, within bounds) on generated texts.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/knowledge/extract.h"
#include "t.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Whitespace-separated words in the 'n' bytes at 'p'. */
static size_t count_words(const char *p, size_t n)
{
    size_t words = 0;

    for (size_t i = 0; i < n; i++) {
        if (!is_ws(p[i]) && (i == 0 || is_ws(p[i - 1])))
            words++;
    }
    return words;
}

/* The chunk 'c' of 'text' as a new C string (caller frees). */
static char *chunk_dup(const char *text, const struct chunk *c)
{
    return xstrndup(text + c->off, c->len);
}

/*
 * Check the invariants of chunks over 'text': each within the text, starting and ending on a
 * non-space byte, at most 1.5 * target words, starts strictly increasing, each starting no
 * later than where the previous one ended (every non-space byte covered), the first at the
 * first word and the last ending at the last word. Returns the number of violations.
 */
static int check_invariants(const char *text, size_t len, const struct chunk *c, size_t n,
                            unsigned target)
{
    size_t first = 0, last = len, limit = target + target / 2;
    int bad = 0;

    while (first < len && is_ws(text[first]))
        first++;
    while (last > 0 && is_ws(text[last - 1]))
        last--;
    if (first == len)
        return n == 0 ? 0 : 1;
    if (n == 0)
        return 1;
    if (c[0].off != first || c[n - 1].off + c[n - 1].len != last)
        bad++;
    for (size_t i = 0; i < n; i++) {
        if (c[i].len == 0 || c[i].off > len || c[i].len > len - c[i].off) {
            bad++;
            continue;
        }
        if (is_ws(text[c[i].off]) || is_ws(text[c[i].off + c[i].len - 1]))
            bad++;
        if (count_words(text + c[i].off, c[i].len) > limit)
            bad++;
        if (i > 0 && (c[i].off <= c[i - 1].off))
            bad++;
        if (i > 0) {
            /* Nothing but whitespace between the previous chunk's end and this start. */
            size_t prev_end = c[i - 1].off + c[i - 1].len;
            for (size_t k = prev_end; k < c[i].off; k++) {
                if (!is_ws(text[k])) {
                    bad++;
                    break;
                }
            }
        }
    }
    return bad;
}

/* "W<k> w<k+1> ..." words joined by spaces, 'per' words a sentence ("W" opens it, "." ends it). */
static void put_sentences(struct buf *b, unsigned *k, unsigned sentences, unsigned per)
{
    for (unsigned s = 0; s < sentences; s++) {
        for (unsigned i = 0; i < per; i++) {
            if (buf_len(b) && buf_ptr(b)[buf_len(b) - 1] != '\n')
                buf_appends(b, " ");
            buf_appendf(b, "%c%u%s", i == 0 ? 'W' : 'w', (*k)++, i + 1 == per ? "." : "");
        }
    }
}

static void test_edges(void)
{
    subtest("edges")
    {
        struct chunk *c = (struct chunk *)1;
        size_t n = 99;

        is_int(chunk_text("", 0, NULL, 0, 100, 20, &c, &n), 0, "empty text");
        ok(c == NULL && n == 0, "empty text: no chunks");
        is_int(chunk_text(" \n\t\n ", 5, NULL, 0, 100, 20, &c, &n), 0, "whitespace only");
        ok(c == NULL && n == 0, "whitespace only: no chunks");
        is_int(chunk_text("a b", 3, NULL, 0, 0, 0, &c, &n), ERR_INVALID, "target 0 is refused");
        ok(c == NULL && n == 0, "target 0: no chunks");

        is_int(chunk_text("  Hello world.  ", 16, NULL, 0, 100, 20, &c, &n), 0, "short text");
        is_int(n, 1, "short text: one chunk");
        if (n == 1) {
            is_int(c[0].off, 2, "the chunk starts at the first word");
            is_int(c[0].len, 12, "and ends at the last");
            is_int(c[0].page, 0, "no pages: page 0");
        }
        free(c);

        is_int(chunk_text("one", 3, NULL, 0, 1, 5, &c, &n), 0, "target 1");
        is_int(n, 1, "target 1: one chunk");
        free(c);
        is_int(chunk_text("a b c d", 7, NULL, 0, 1, 5, &c, &n), 0, "target 1, four words");
        is_int(n, 4, "target 1: one word each (no overlap possible)");
        is_int(check_invariants("a b c d", 7, c, n, 1), 0, "target 1: invariants");
        free(c);
    }
}

static void test_paragraphs(void)
{
    subtest("paragraphs")
    {
        struct buf b;
        struct chunk *c;
        size_t n, p2, p3;
        unsigned k = 0;
        char *s;

        /* Three paragraphs of three 10-word sentences; target 50, overlap 10. */
        buf_init(&b, 1 << 20);
        put_sentences(&b, &k, 3, 10);
        buf_appends(&b, "\n\n");
        p2 = buf_len(&b);
        put_sentences(&b, &k, 3, 10);
        buf_appends(&b, "\n\n");
        p3 = buf_len(&b);
        put_sentences(&b, &k, 3, 10);

        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 50, 10, &c, &n), 0, "chunked");
        is_int(n, 3, "one chunk per paragraph");
        if (n == 3) {
            is_int(c[0].off, 0, "chunk 1 is paragraph 1");
            is_int(c[0].len, p2 - 2, "chunk 1 ends with paragraph 1");
            s = chunk_dup(buf_ptr(&b), &c[1]);
            ok(strncmp(s, "W20 ", 4) == 0, "chunk 2 opens with the last 10 words of chunk 1");
            is_int(count_words(s, strlen(s)), 40, "chunk 2: 10 overlap + 30 words");
            is_int(c[1].off + c[1].len, p3 - 2, "chunk 2 ends with paragraph 2");
            free(s);
            s = chunk_dup(buf_ptr(&b), &c[2]);
            ok(strncmp(s, "W50 ", 4) == 0, "chunk 3 opens with the last 10 words of chunk 2");
            ok(s[strlen(s) - 1] == '.', "chunk 3 ends the text");
            free(s);
        }
        is_int(check_invariants(buf_ptr(&b), buf_len(&b), c, n, 50), 0, "invariants");
        free(c);

        /* Small paragraphs are grouped until the chunk holds half the target. */
        buf_reset(&b);
        k = 0;
        for (int i = 0; i < 6; i++) {
            put_sentences(&b, &k, 1, 5);
            buf_appends(&b, "\n\n");
        }
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 20, 0, &c, &n), 0, "small paras");
        is_int(n, 3, "six 5-word paragraphs, target 20: chunks of two");
        if (n == 3)
            is_int(count_words(buf_ptr(&b) + c[0].off, c[0].len), 10, "the first holds 10 words");
        is_int(check_invariants(buf_ptr(&b), buf_len(&b), c, n, 20), 0, "small paras: invariants");
        free(c);
        buf_cleanup(&b);
    }
}

static void test_sentences(void)
{
    subtest("sentences")
    {
        struct buf b;
        struct chunk *c;
        size_t n;
        unsigned k = 0;
        int bad = 0;

        /* One paragraph of 8-word sentences; target 20: two sentences (16 words) a chunk. */
        buf_init(&b, 1 << 20);
        put_sentences(&b, &k, 10, 8);
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 20, 0, &c, &n), 0, "chunked");
        is_int(n, 5, "five chunks");
        for (size_t i = 0; i < n; i++) {
            if (buf_ptr(&b)[c[i].off + c[i].len - 1] != '.' ||
                count_words(buf_ptr(&b) + c[i].off, c[i].len) != 16)
                bad++;
        }
        is_int(bad, 0, "each chunk is two whole sentences");
        free(c);

        /* "e.g. this" does not end a sentence; "Next." followed by a capital does. */
        {
            const char *s = "Alpha beta e.g. gamma delta. Epsilon zeta eta theta! Iota kappa.";
            is_int(chunk_text(s, strlen(s), NULL, 0, 4, 0, &c, &n), 0, "abbreviations");
            is_int(n, 3, "three sentences, three chunks");
            if (n == 3) {
                char *t = chunk_dup(s, &c[0]);
                is_str(t, "Alpha beta e.g. gamma delta.", "e.g. followed by lower case goes on");
                free(t);
                t = chunk_dup(s, &c[1]);
                is_str(t, "Epsilon zeta eta theta!", "'!' ends a sentence");
                free(t);
            }
            free(c);
        }
        /* Closing quotes and brackets after the stop. */
        {
            const char *s = "He said \"stop.\" Then (he left.) And then went home.";
            is_int(chunk_text(s, strlen(s), NULL, 0, 3, 0, &c, &n), 0, "quotes");
            if (n >= 1) {
                char *t = chunk_dup(s, &c[0]);
                is_str(t, "He said \"stop.\"", "a quote after the full stop");
                free(t);
            }
            is_int(check_invariants(s, strlen(s), c, n, 3), 0, "quotes: invariants");
            free(c);
        }
        buf_cleanup(&b);
    }
}

static void test_long(void)
{
    subtest("long sentences and words")
    {
        struct buf b;
        struct chunk *c;
        size_t n;
        int bad = 0;

        /* 500 words, no punctuation: cut at words, 100 a chunk with 20 of overlap. */
        buf_init(&b, 1 << 20);
        for (int i = 0; i < 500; i++)
            buf_appendf(&b, "%sx%d", i ? " " : "", i);
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 100, 20, &c, &n), 0, "chunked");
        is_int(n, 6, "500 words: 100 + 5 x 80 new words");
        for (size_t i = 0; i < n; i++) {
            if (count_words(buf_ptr(&b) + c[i].off, c[i].len) != 100)
                bad++;
        }
        is_int(bad, 0, "each chunk holds 100 words");
        if (n >= 2) {
            char *s = chunk_dup(buf_ptr(&b), &c[1]);
            ok(strncmp(s, "x80 x81 ", 8) == 0, "chunk 2 opens with words 80-99 of chunk 1");
            free(s);
        }
        is_int(check_invariants(buf_ptr(&b), buf_len(&b), c, n, 100), 0, "invariants");
        free(c);

        /* A short tail joins the last chunk instead of making a tiny one. */
        buf_reset(&b);
        for (int i = 0; i < 110; i++)
            buf_appendf(&b, "%sy%d", i ? " " : "", i);
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 100, 20, &c, &n), 0, "tail");
        is_int(n, 1, "110 words, target 100: one chunk of 110 (within 150)");
        free(c);

        /* One 1000-byte word: counted as words of at most 256 bytes. */
        buf_reset(&b);
        for (int i = 0; i < 1000; i++)
            buf_appends(&b, "z");
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 2, 0, &c, &n), 0, "long word");
        ok(n >= 2, "a 1000-byte word makes several chunks at target 2");
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            if (c[i].len > 3 * 256)
                bad++;
        }
        is_int(bad, 0, "no chunk passes 1.5 x target x 256 bytes");
        is_int(c[n - 1].off + c[n - 1].len, 1000, "the word is covered to its end");
        free(c);

        /* A long word of two-byte characters is never cut inside a character. */
        buf_reset(&b);
        for (int i = 0; i < 300; i++)
            buf_appends(&b, "\xC3\xA9");
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 1, 0, &c, &n), 0, "long UTF-8 word");
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            if ((buf_ptr(&b)[c[i].off] & 0xC0) == 0x80 || c[i].len % 2)
                bad++;
        }
        ok(n >= 3, "600 bytes: at least three pieces");
        is_int(bad, 0, "each piece starts and ends on a character boundary");
        free(c);
        buf_cleanup(&b);
    }
}

static void test_pages(void)
{
    subtest("pages")
    {
        /* Three pages, each a paragraph of two 10-word sentences. */
        struct buf b;
        struct extract_page pages[3];
        struct chunk *c;
        size_t n;
        unsigned k = 0;

        buf_init(&b, 1 << 20);
        for (int p = 0; p < 3; p++) {
            if (p)
                buf_appends(&b, "\n\n");
            pages[p].page = p + 1;
            pages[p].off = buf_len(&b);
            put_sentences(&b, &k, 2, 10);
            pages[p].len = buf_len(&b) - pages[p].off;
        }
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), pages, 3, 30, 5, &c, &n), 0, "chunked");
        is_int(n, 3, "one chunk per page");
        if (n == 3) {
            is_int(c[0].page, 1, "chunk 1 starts on page 1");
            is_int(c[1].page, 1, "chunk 2 starts on page 1 (its overlap)");
            is_int(c[2].page, 2, "chunk 3 starts on page 2 (its overlap)");
        }
        free(c);
        is_int(chunk_text(buf_ptr(&b), buf_len(&b), pages, 3, 30, 0, &c, &n), 0, "no overlap");
        if (n == 3) {
            is_int(c[1].page, 2, "without overlap chunk 2 starts on page 2");
            is_int(c[2].page, 3, "and chunk 3 on page 3");
        }
        free(c);
        buf_cleanup(&b);
    }
}

/* A pseudo-random text: words, punctuation, spaces, newlines, form feeds, UTF-8. */
static void random_text(struct buf *b, uint32_t *seed, size_t words)
{
    static const char *const pieces[] = {"word",        "Alpha", "b",    "e.g.",
                                         "end.",        "Yes!",  "why?", "\xC3\xA9t\xC3\xA9",
                                         "\"quoted.\"", "(x.)",  "3.14"};
    static const char *const gaps[] = {" ", " ", " ", "  ", "\n", "\n\n", "\t", " \n \n ", "\f"};

    for (size_t i = 0; i < words; i++) {
        *seed = *seed * 1103515245u + 12345u;
        buf_appends(b, pieces[(*seed >> 16) % (sizeof(pieces) / sizeof(pieces[0]))]);
        *seed = *seed * 1103515245u + 12345u;
        buf_appends(b, gaps[(*seed >> 16) % (sizeof(gaps) / sizeof(gaps[0]))]);
    }
}

static void test_generated(void)
{
    subtest("generated texts")
    {
        static const unsigned targets[][2] = {{1, 0},   {2, 1},    {3, 3},    {10, 2},
                                              {50, 10}, {100, 20}, {100, 99}, {7, 100}};
        uint32_t seed = 42;
        int bad = 0, runs = 0;

        for (int round = 0; round < 40; round++) {
            struct buf b;

            buf_init(&b, 1 << 22);
            random_text(&b, &seed, (size_t)(round * 37 % 900) + 1);
            for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
                struct chunk *c;
                size_t n;

                if (chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, targets[t][0], targets[t][1], &c,
                               &n) != 0)
                    bad++;
                else
                    bad += check_invariants(buf_ptr(&b), buf_len(&b), c, n, targets[t][0]);
                free(c);
                runs++;
            }
            buf_cleanup(&b);
        }
        is_int(bad, 0, "invariants hold on 320 generated texts and targets");
        ok(runs == 320, "all runs done");
    }
}

static void test_nomem(void)
{
    subtest("allocation failures")
    {
        struct buf b;
        unsigned k = 0;
        int clean = 0, tries = 0;
        struct chunk *c;
        size_t n;
        int rc;

        buf_init(&b, 1 << 20);
        put_sentences(&b, &k, 100, 10); /* 1000 words: the chunk array grows past 16 */
        for (long nth = 1; nth < 50; nth++) {
            mem_fail_after(nth);
            rc = chunk_text(buf_ptr(&b), buf_len(&b), NULL, 0, 10, 2, &c, &n);
            mem_fail_after(0);
            tries++;
            if (rc == 0) {
                ok(n > 16, "succeeds once the allocations do");
                free(c);
                break;
            }
            if (rc == ERR_NOMEM && c == NULL && n == 0)
                clean++;
        }
        is_int(clean, tries - 1, "every failed allocation gives ERR_NOMEM and no chunks");
        buf_cleanup(&b);
    }
}

int main(void)
{
    test_edges();
    test_paragraphs();
    test_sentences();
    test_long();
    test_pages();
    test_generated();
    test_nomem();
    return done_testing();
}
