/* SPDX-License-Identifier: MIT */
/*
 * fuzz_chunk: the chunker (knowledge/chunk.c) over any text. The input is a small header and
 * then the text:
 *
 *     byte 0   the target in words (1-256: the byte plus one)
 *     byte 1   the overlap in words (0-255; the chunker clamps it to half the target)
 *     byte 2   the number of pages (0-7); the text is cut into that many pages at
 *              evenly spaced offsets (page numbers 1, 2, ...)
 *     the rest the text (any bytes: NUL, invalid UTF-8, form feeds)
 *
 * Checks, against an independent count of whitespace-separated words:
 *   - chunk_text() returns 0; no words gives no chunks (NULL, 0);
 *   - every chunk lies within the text, is non-empty, and starts and ends on a non-space byte;
 *   - no chunk holds more than target + target / 2 words;
 *   - chunk starts strictly increase; between one chunk's end and the next one's start there
 *     is only whitespace; the first chunk starts at the first word and the last ends at the
 *     last word: every word is covered, in order;
 *   - each chunk's page is that of the last page starting at or before its first byte.
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/err.h"
#include "../../src/knowledge/extract.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_chunk: check failed at line %d: %s\n", __LINE__, #c);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static bool is_ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Whitespace-separated words in the 'n' bytes at 'p'. */
static size_t count_words(const uint8_t *p, size_t n)
{
    size_t words = 0;

    for (size_t i = 0; i < n; i++) {
        if (!is_ws(p[i]) && (i == 0 || is_ws(p[i - 1])))
            words++;
    }
    return words;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct extract_page pages[7];
    struct chunk *c = NULL;
    const uint8_t *text;
    unsigned target, overlap;
    size_t len, npages, n = 0, first = 0, last;
    int rc;

    if (size < 3)
        return 0;
    target = (unsigned)data[0] + 1;
    overlap = data[1];
    npages = data[2] % 8;
    text = data + 3;
    len = size - 3;
    for (size_t p = 0; p < npages; p++) {
        size_t from = len * p / npages, to = len * (p + 1) / npages;
        pages[p].page = (int)p + 1;
        pages[p].off = from;
        pages[p].len = to - from;
    }

    rc =
        chunk_text((const char *)text, len, npages ? pages : NULL, npages, target, overlap, &c, &n);
    CHECK(rc == 0);
    while (first < len && is_ws(text[first]))
        first++;
    last = len;
    while (last > first && is_ws(text[last - 1]))
        last--;
    if (first == len) {
        CHECK(n == 0 && c == NULL);
        return 0;
    }
    CHECK(n > 0 && c != NULL);
    CHECK(c[0].off == first);
    CHECK(c[n - 1].off + c[n - 1].len == last);
    for (size_t i = 0; i < n; i++) {
        int want = 0;

        CHECK(c[i].len > 0 && c[i].off < len && c[i].len <= len - c[i].off);
        CHECK(!is_ws(text[c[i].off]) && !is_ws(text[c[i].off + c[i].len - 1]));
        CHECK(count_words(text + c[i].off, c[i].len) <= target + target / 2);
        if (i > 0) {
            size_t prev_end = c[i - 1].off + c[i - 1].len;
            CHECK(c[i].off > c[i - 1].off);
            for (size_t k = prev_end; k < c[i].off; k++)
                CHECK(is_ws(text[k]));
        }
        if (npages) {
            want = pages[0].page;
            for (size_t p = 0; p < npages; p++) {
                if (pages[p].off <= c[i].off)
                    want = pages[p].page;
            }
        }
        CHECK(c[i].page == want);
    }
    free(c);
    return 0;
}
