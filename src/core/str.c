/* SPDX-License-Identifier: MIT */
/*
 * str: slice comparisons and strict integer parsing. "+1", " 1", "1 ", "0x1" and "" are all
 * invalid: a query parameter or flag is a plain decimal or it is wrong.
 */
#include "str.h"

#include "err.h"

#include <string.h>

/* True when 'a' holds exactly the bytes of 'b'. */
bool str_eq(struct str a, const char *b)
{
    size_t n = strlen(b);
    return a.len == n && (n == 0 || memcmp(a.p, b, n) == 0);
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* True when 'a' equals 'b' ignoring ASCII case. */
bool str_eq_nocase(struct str a, const char *b)
{
    size_t n = strlen(b);
    if (a.len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (lower(a.p[i]) != lower(b[i]))
            return false;
    }
    return true;
}

/* True when 'a' begins with 'prefix'. */
bool str_starts(struct str a, const char *prefix)
{
    size_t n = strlen(prefix);
    return a.len >= n && memcmp(a.p, prefix, n) == 0;
}

/* Parse decimal digits only into '*out'. Returns 0 or ERR_INVALID (empty, junk, overflow). */
int str_to_u64(struct str s, uint64_t *out)
{
    uint64_t v = 0;

    if (s.len == 0 || s.len > 20)
        return ERR_INVALID;
    for (size_t i = 0; i < s.len; i++) {
        unsigned d;
        if (s.p[i] < '0' || s.p[i] > '9')
            return ERR_INVALID;
        d = (unsigned)(s.p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return ERR_INVALID;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Parse an optional '-' and decimal digits into '*out'. Returns 0 or ERR_INVALID. */
int str_to_i64(struct str s, int64_t *out)
{
    bool neg = false;
    uint64_t v;

    if (s.len && s.p[0] == '-') {
        neg = true;
        s.p++;
        s.len--;
    }
    if (str_to_u64(s, &v))
        return ERR_INVALID;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return ERR_INVALID;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return ERR_INVALID;
        *out = (int64_t)v;
    }
    return 0;
}
