/* SPDX-License-Identifier: MIT */
/*
 * fuzz_text.h: what the text extractors' fuzz targets share: a CHECK that aborts naming the
 * target (define FUZZ_NAME first), an independent RFC 3629 UTF-8 validator, and the "clean
 * text" rule every extractor's output must follow.
 */
#ifndef WORKFORCE_FUZZ_TEXT_H
#define WORKFORCE_FUZZ_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, FUZZ_NAME ": check failed at line %d: %s\n", __LINE__, #c);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* RFC 3629 UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), table style. */
static inline bool utf8_valid(const unsigned char *s, size_t n)
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
static inline bool clean(const unsigned char *s, size_t n)
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

#endif
