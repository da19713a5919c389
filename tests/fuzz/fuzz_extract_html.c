/* SPDX-License-Identifier: MIT */
/*
 * fuzz_extract_html: the HTML extractor (knowledge/extract_text.c, extract_html()) on any
 * bytes. Checks:
 *   - the result is 0 or ERR_INVALID, and valid UTF-8 (independent validator) is never
 *     ERR_INVALID;
 *   - the text is clean (valid UTF-8, no CR, no control character but TAB and LF) and never
 *     starts with a line break;
 *   - it grows by at most 3 bytes per input byte (U+FFFD for one byte, a character reference
 *     is never longer than its UTF-8);
 *   - printable ASCII text without '<' or '&' comes out as its words joined by single spaces;
 *   - the run is deterministic, and the cap of 'out' is exact (its own length fits, one byte
 *     less is ERR_LIMIT).
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/knowledge/extract.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_extract_html"
#include "fuzz_text.h"

static bool html_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

/* Whether 'data' is printable ASCII, spaces, TABs and LFs only, without '<' and '&'. */
static bool plain(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (!((data[i] >= 0x20 && data[i] < 0x7F) || data[i] == '\t' || data[i] == '\n') ||
            data[i] == '<' || data[i] == '&')
            return false;
    }
    return true;
}

/* The words of 'data' joined by single spaces, into 'b'. */
static void collapse(const uint8_t *data, size_t size, struct buf *b)
{
    size_t i = 0;

    while (i < size) {
        size_t j;
        if (html_space(data[i])) {
            i++;
            continue;
        }
        j = i;
        while (j < size && !html_space(data[j]))
            j++;
        if (buf_len(b))
            buf_append(b, " ", 1);
        buf_append(b, data + i, j - i);
        i = j;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct buf out, again, tight;
    int rc;

    buf_init(&out, (size_t)1 << 22);
    rc = extract_html(in, size, &out);
    CHECK(rc == 0 || rc == ERR_INVALID);
    if (utf8_valid(data, size))
        CHECK(rc == 0);
    if (rc == 0) {
        CHECK(clean((const unsigned char *)buf_ptr(&out), buf_len(&out)));
        CHECK(buf_len(&out) == 0 || buf_ptr(&out)[0] != '\n');
        CHECK(buf_len(&out) <= 3 * size);
        if (plain(data, size)) {
            struct buf want;
            buf_init(&want, (size_t)1 << 22);
            collapse(data, size, &want);
            CHECK(buf_len(&want) == buf_len(&out));
            CHECK(memcmp(buf_ptr(&want), buf_ptr(&out), buf_len(&out)) == 0);
            buf_cleanup(&want);
        }

        buf_init(&again, (size_t)1 << 22);
        CHECK(extract_html(in, size, &again) == 0);
        CHECK(buf_len(&again) == buf_len(&out));
        CHECK(memcmp(buf_ptr(&again), buf_ptr(&out), buf_len(&out)) == 0);
        buf_cleanup(&again);

        buf_init(&tight, buf_len(&out));
        CHECK(extract_html(in, size, &tight) == 0);
        buf_cleanup(&tight);
        if (buf_len(&out) > 0) {
            buf_init(&tight, buf_len(&out) - 1);
            CHECK(extract_html(in, size, &tight) == ERR_LIMIT);
            buf_cleanup(&tight);
        }
    }
    buf_cleanup(&out);
    return 0;
}
