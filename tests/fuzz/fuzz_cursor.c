/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cursor: pagination cursors (router/cursor.c) both ways.
 *   1. The input as a cursor string: router_cursor_decode() with n = 1..3 fields. At most one
 *      n can succeed; its fields are non-empty, at most 512 bytes, valid UTF-8 (checked here by
 *      an independent validator) and free of NUL, and encoding them gives a canonical cursor
 *      that decodes to the same fields and encodes to itself again.
 *   2. The input as field values split at NUL bytes: when there are 1..3 fields and each is
 *      non-empty, valid UTF-8 and at most 512 bytes, router_cursor_encode() must give a cursor
 *      that router_cursor_decode() accepts and returns the same fields from; otherwise decoding
 *      the encoding must fail (a field the decoder would refuse).
 * Pure: no I/O; the arena is released.
 */
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/router/router.h"

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
            fprintf(stderr, "fuzz_cursor: check failed at line %d: %s\n", __LINE__, #c);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_FIELDS 3
#define FIELD_MAX 512

/* RFC 3629 UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), table style. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        unsigned char lo = 0x80, hi = 0xBF;
        size_t more;
        if (c <= 0x7F) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return false;
        }
        if (n - i <= more)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= more; k++) {
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return false;
        }
        i += more + 1;
    }
    return true;
}

static bool field_ok(const char *s, size_t len)
{
    return len > 0 && len <= FIELD_MAX && memchr(s, '\0', len) == NULL &&
           utf8_valid((const unsigned char *)s, len);
}

/* encode(fields) decodes to 'fields' again and re-encodes to the same string. */
static void check_roundtrip(struct arena *a, const char *const *fields, size_t n)
{
    const char *back[MAX_FIELDS];
    char *cur = router_cursor_encode(a, fields, n), *again;
    size_t len = strlen(cur);

    CHECK(cur != NULL);
    for (size_t i = 0; i < len; i++)
        CHECK((cur[i] >= 'A' && cur[i] <= 'Z') || (cur[i] >= 'a' && cur[i] <= 'z') ||
              (cur[i] >= '0' && cur[i] <= '9') || cur[i] == '-' || cur[i] == '_');
    CHECK(router_cursor_decode(cur, len, a, back, n) == 0);
    for (size_t i = 0; i < n; i++)
        CHECK(strcmp(back[i], fields[i]) == 0);
    again = router_cursor_encode(a, back, n);
    CHECK(strcmp(again, cur) == 0);
    /* The same cursor never decodes to another field count. */
    for (size_t m = 1; m <= MAX_FIELDS; m++) {
        if (m != n)
            CHECK(router_cursor_decode(cur, len, a, back, m) == ERR_INVALID);
    }
}

/* Part 1: the input is a cursor. */
static void as_cursor(struct arena *a, const char *s, size_t size)
{
    size_t ok_n = 0;

    for (size_t n = 1; n <= MAX_FIELDS; n++) {
        const char *fields[MAX_FIELDS];
        int rc = router_cursor_decode(s, size, a, fields, n);
        if (rc) {
            CHECK(rc == ERR_INVALID);
            continue;
        }
        CHECK(ok_n == 0); /* only one field count can fit */
        ok_n = n;
        CHECK(size >= 2 && size <= 2048);
        for (size_t i = 0; i < n; i++)
            CHECK(field_ok(fields[i], strlen(fields[i])));
        check_roundtrip(a, fields, n);
    }
}

/* Part 2: the input is NUL-separated field values. */
static void as_fields(struct arena *a, const char *s, size_t size)
{
    const char *fields[MAX_FIELDS];
    size_t n = 0, start = 0;
    bool all_ok = true;
    char *cur;
    const char *back[MAX_FIELDS];

    for (size_t i = 0; i <= size; i++) {
        if (i < size && s[i] != '\0')
            continue;
        if (n == MAX_FIELDS)
            return;
        if (!field_ok(s + start, i - start))
            all_ok = false;
        fields[n++] = arena_strndup(a, s + start, i - start);
        start = i + 1;
    }
    if (all_ok) {
        check_roundtrip(a, fields, n);
        return;
    }
    /* Some field is empty, too long or not UTF-8: its cursor must not decode. */
    cur = router_cursor_encode(a, fields, n);
    CHECK(router_cursor_decode(cur, strlen(cur), a, back, n) == ERR_INVALID);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena a;

    arena_init(&a);
    as_cursor(&a, (const char *)data, size);
    as_fields(&a, (const char *)data, size);
    arena_cleanup(&a);
    return 0;
}
