/* SPDX-License-Identifier: MIT */
/*
 * fuzz_extract_text: the plain-text extractor (knowledge/extract_text.c, extract_text()) on
 * any bytes. Checks:
 *   - the result is 0 or ERR_INVALID (the 1 MiB cap is never reached by libFuzzer inputs);
 *   - ERR_INVALID only for input that is not UTF-8 (checked by an independent validator):
 *     valid UTF-8 is always accepted;
 *   - the text is clean: valid UTF-8, no CR, no control character but TAB and LF;
 *   - valid UTF-8 without BOM, CR or control characters comes out unchanged;
 *   - the text grows by at most U+FFFD (3 bytes) per input byte;
 *   - cleaning the text again changes nothing (extract_put_clean is idempotent);
 *   - the cap of 'out' is exact: the text's own length fits, one byte less is ERR_LIMIT.
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/knowledge/extract.h"
#include "../../src/knowledge/extract_int.h"

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
            fprintf(stderr, "fuzz_extract_text: check failed at line %d: %s\n", __LINE__, #c);     \
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    bool bom = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0;
    struct buf out, again, tight;
    int rc;

    buf_init(&out, (size_t)1 << 20);
    rc = extract_text(in, size, &out);
    CHECK(rc == 0 || rc == ERR_INVALID);
    if (utf8_valid(data, size))
        CHECK(rc == 0);
    if (rc == 0) {
        CHECK(clean((const unsigned char *)buf_ptr(&out), buf_len(&out)));
        CHECK(buf_len(&out) <= 3 * size);
        if (!bom && clean(data, size))
            CHECK(buf_len(&out) == size && memcmp(buf_ptr(&out), data, size) == 0);

        buf_init(&again, (size_t)1 << 22);
        CHECK(extract_put_clean(&again, buf_ptr(&out), buf_len(&out)) == 0);
        CHECK(buf_len(&again) == buf_len(&out));
        CHECK(memcmp(buf_ptr(&again), buf_ptr(&out), buf_len(&out)) == 0);
        buf_cleanup(&again);

        buf_init(&tight, buf_len(&out));
        CHECK(extract_text(in, size, &tight) == 0);
        CHECK(buf_len(&tight) == buf_len(&out));
        buf_cleanup(&tight);
        if (buf_len(&out) > 0) {
            buf_init(&tight, buf_len(&out) - 1);
            CHECK(extract_text(in, size, &tight) == ERR_LIMIT);
            buf_cleanup(&tight);
        }
    }
    buf_cleanup(&out);
    return 0;
}
