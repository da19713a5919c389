/* SPDX-License-Identifier: MIT */
/*
 * utf8.c: well-formed UTF-8 (RFC 3629) for every module: the JSON writer refuses to emit
 * anything else, the upload form fields are checked with it, and names are cut with it at a
 * character boundary. No I/O, no globals.
 */
#include "utf8.h"

#include "mem.h"

#include <string.h>

/*
 * Length of the well-formed UTF-8 sequence at 'p' ('n' > 0 bytes left), or 0 when it is not
 * one; then '*skip' is the length of its maximal subpart (1-3), the bytes one U+FFFD replaces.
 */
size_t utf8_seq(const char *p, size_t n, size_t *skip)
{
    const unsigned char *s = (const unsigned char *)p;
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        *skip = 1;
        return 0;
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *skip = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

/* True when the 'n' bytes at 's' are well-formed UTF-8. NUL bytes are valid UTF-8 here. */
bool utf8_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t skip, k;
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        k = utf8_seq(s + i, n - i, &skip);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

/*
 * The length of the longest prefix of the 'n' bytes at 's' that is at most 'max' bytes and
 * does not end inside a multi-byte sequence ('s' is valid UTF-8; for invalid input the cut
 * still never splits a well-formed sequence).
 */
size_t utf8_prefix(const char *s, size_t n, size_t max)
{
    size_t i = 0;
    if (n <= max)
        return n;
    while (i < max) {
        size_t skip = 1, k = utf8_seq(s + i, n - i, &skip);
        if (!k)
            k = skip;
        if (i + k > max)
            break;
        i += k;
    }
    return i;
}

/*
 * A NUL-terminated copy of the 'n' bytes at 's' in which every invalid sequence (each maximal
 * subpart) is replaced by U+FFFD. The caller frees it with free(). Never NULL (x*alloc).
 */
char *utf8_scrub_dup(const char *s, size_t n)
{
    /* each invalid byte becomes at most 3 bytes */
    char *out = xmalloc(n * 3 + 1);
    size_t i = 0, o = 0;

    while (i < n) {
        size_t skip = 1, k = utf8_seq(s + i, n - i, &skip);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += skip;
        }
    }
    out[o] = '\0';
    return out;
}

/* See utf8.h. */
size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
