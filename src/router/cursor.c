/* SPDX-License-Identifier: MIT */
/*
 * cursor.c: opaque pagination cursors. A cursor is base64url (no padding) of a version byte
 * '1' followed by the keyset fields separated by NUL bytes (no field can hold NUL: JSON input
 * refuses \u0000). Decoding checks the alphabet, canonical padding bits, the version, the field
 * count and that each field is non-empty UTF-8 of at most 512 bytes; anything else is a bad
 * cursor. Whatever encode makes from valid fields, decode accepts. Pure and fuzzed.
 */
#include "router.h"

#include "../core/utf8.h"

#include <string.h>

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Encode the 'n' 'fields' as a cursor string allocated in 'a'. */
char *router_cursor_encode(struct arena *a, const char *const *fields, size_t n)
{
    size_t raw_len = 1, o = 0;
    char *raw, *out;

    for (size_t i = 0; i < n; i++)
        raw_len += strlen(fields[i]) + (i ? 1 : 0);
    raw = arena_alloc(a, raw_len);
    raw[o++] = '1';
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(fields[i]);
        if (i)
            raw[o++] = '\0';
        memcpy(raw + o, fields[i], l);
        o += l;
    }
    out = arena_alloc(a, (raw_len + 2) / 3 * 4 + 1);
    o = 0;
    for (size_t i = 0; i < raw_len; i += 3) {
        unsigned v = (unsigned char)raw[i] << 16;
        size_t left = raw_len - i;
        if (left > 1)
            v |= (unsigned char)raw[i + 1] << 8;
        if (left > 2)
            v |= (unsigned char)raw[i + 2];
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        if (left > 1)
            out[o++] = b64[v >> 6 & 63];
        if (left > 2)
            out[o++] = b64[v & 63];
    }
    out[o] = '\0';
    return out;
}

static int dec(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/*
 * Decode the cursor of 'len' bytes at 's' into exactly 'n' fields (strings in 'a'). Returns 0
 * or ERR_INVALID.
 */
int router_cursor_decode(const char *s, size_t len, struct arena *a, const char **fields, size_t n)
{
    unsigned char *raw;
    size_t o = 0, start, f = 0;

    /* The longest cursor of n fields of 512 bytes: 1 + n * 513 raw bytes, base64 without '='. */
    if (len < 2 || len % 4 == 1 || len > ((1 + n * 513) * 4 + 2) / 3)
        return ERR_INVALID;
    raw = arena_alloc(a, len * 3 / 4 + 1);
    for (size_t i = 0; i < len; i += 4) {
        unsigned v = 0;
        size_t k = len - i < 4 ? len - i : 4;
        for (size_t j = 0; j < 4; j++) {
            int d = j < k ? dec(s[i + j]) : 0;
            if (d < 0)
                return ERR_INVALID;
            v = v << 6 | (unsigned)d;
        }
        /* The bits past the last whole byte must be zero (one encoding per cursor). */
        if ((k == 2 && (v & 0xFFFF)) || (k == 3 && (v & 0xFF)))
            return ERR_INVALID;
        raw[o++] = (unsigned char)(v >> 16);
        if (k > 2)
            raw[o++] = (unsigned char)(v >> 8 & 255);
        if (k > 3)
            raw[o++] = (unsigned char)(v & 255);
    }
    if (o < 2 || raw[0] != '1')
        return ERR_INVALID;
    start = 1;
    for (size_t i = 1; i <= o; i++) {
        if (i == o || raw[i] == '\0') {
            size_t fl = i - start;
            if (f >= n || fl == 0 || fl > 512 || !utf8_valid((const char *)raw + start, fl))
                return ERR_INVALID;
            fields[f++] = arena_strndup(a, (const char *)raw + start, fl);
            start = i + 1;
        }
    }
    return f == n ? 0 : ERR_INVALID;
}
