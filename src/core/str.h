/* SPDX-License-Identifier: MIT */
/*
 * str: read-only slices into someone else's buffer (picohttpparser), and the only number
 * parsers of the code base (curl strparse): strict decimal, no sign surprises, no whitespace.
 */
#ifndef WORKFORCE_STR_H
#define WORKFORCE_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct str {
    const char *p;
    size_t len;
};

static inline struct str str_c(const char *s)
{
    struct str r = {s, 0};
    while (s && s[r.len])
        r.len++;
    return r;
}

bool str_eq(struct str a, const char *b);        /* byte-equal to a C string */
bool str_eq_nocase(struct str a, const char *b); /* ASCII case-insensitive */
bool str_starts(struct str a, const char *prefix);
int str_to_i64(struct str s, int64_t *out);  /* "-12": 0 or ERR_INVALID (empty, junk, overflow) */
int str_to_u64(struct str s, uint64_t *out); /* digits only */

/* The value of the hex digit 'c' (either case), or -1. */
static inline int str_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
