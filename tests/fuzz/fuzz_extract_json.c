/* SPDX-License-Identifier: MIT */
/*
 * fuzz_extract_json: the JSON extractor (knowledge/extract_text.c, extract_json()) on any
 * bytes. Checks:
 *   - the result is 0 exactly when jansson, called here directly, parses the input (after a
 *     UTF-8 BOM) as any JSON value; otherwise ERR_INVALID;
 *   - the text is clean: valid UTF-8, no CR, no control character but TAB and LF;
 *   - every string value of a top-level array of strings appears in the text, on its own line
 *     when it has no control characters;
 *   - the cap of 'out' is exact (its own length fits, one byte less is ERR_LIMIT).
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/knowledge/extract.h"

#include <jansson.h>
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
            fprintf(stderr, "fuzz_extract_json: check failed at line %d: %s\n", __LINE__, #c);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* RFC 3629 UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), table style. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i], lo = 0x80, hi = 0xBF;
        size_t more;
        if (c <= 0x7F) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            return false;
        }
        if (n - i <= more || s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= more; k++) {
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return false;
        }
        i += more + 1;
    }
    return true;
}

/* Valid UTF-8 with no control character (C0, DEL, C1) other than TAB and LF. */
static bool clean(const unsigned char *s, size_t n)
{
    if (!utf8_valid(s, n))
        return false;
    for (size_t i = 0; i < n; i++) {
        if ((s[i] < 0x20 && s[i] != '\t' && s[i] != '\n') || s[i] == 0x7F)
            return false;
        if (s[i] == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9F)
            return false;
    }
    return true;
}

/* Whether the line 's' (no LF in it) is a whole line of the 'n' bytes at 'text'. */
static bool has_line(const char *text, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i + len < n + 1; i++) {
        if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, s, len) == 0 &&
            (i + len == n || text[i + len] == '\n'))
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t skip = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    json_error_t jerr;
    json_t *ref = json_loadb(in + skip, size - skip, JSON_DECODE_ANY, &jerr);
    struct buf out, tight;
    int rc;

    buf_init(&out, (size_t)1 << 22);
    rc = extract_json(in, size, &out);
    CHECK(rc == (ref ? 0 : ERR_INVALID));
    if (rc == 0) {
        CHECK(clean((const unsigned char *)buf_ptr(&out), buf_len(&out)));
        if (json_is_array(ref)) {
            size_t i;
            json_t *v;
            json_array_foreach(ref, i, v)
            {
                const char *s = json_string_value(v);
                size_t len = json_string_length(v);
                if (s && clean((const unsigned char *)s, len) && !memchr(s, '\n', len))
                    CHECK(has_line(buf_ptr(&out), buf_len(&out), s, len));
            }
        }
        buf_init(&tight, buf_len(&out));
        CHECK(extract_json(in, size, &tight) == 0);
        buf_cleanup(&tight);
        if (buf_len(&out) > 0) {
            buf_init(&tight, buf_len(&out) - 1);
            CHECK(extract_json(in, size, &tight) == ERR_LIMIT);
            buf_cleanup(&tight);
        }
    }
    json_decref(ref);
    buf_cleanup(&out);
    return 0;
}
