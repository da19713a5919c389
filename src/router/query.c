/* SPDX-License-Identifier: MIT */
/*
 * query.c: the query-string decoder. The HTTP layer hands over the raw string after '?'
 * (libmicrohttpd is kept from parsing it, see http/server.c); this turns it into name/value
 * pairs with strict rules: percent escapes must be two hex digits, %00 is refused (a C string
 * would end there and a value would read as absent), names and values must be UTF-8, and past
 * ROUTER_MAX_QUERY pairs the request is refused as too long. '+' stays '+' (RFC 3986; the API
 * has no form-encoded queries). Pure: no I/O, no globals, memory from the arena; fuzzed.
 */
#include "router.h"

#include "../core/str.h"
#include "../core/utf8.h"

#include <string.h>

/* Decode the 'n' bytes at 'p' into a NUL-terminated arena copy; NULL when an escape is bad. */
static char *decode(struct arena *a, const char *p, size_t n, size_t *outlen, bool *nul)
{
    char *out = arena_alloc(a, n + 1);
    size_t o = 0;
    *nul = false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') {
            out[o++] = p[i];
            continue;
        }
        if (i + 2 >= n || str_hex_digit(p[i + 1]) < 0 || str_hex_digit(p[i + 2]) < 0)
            return NULL;
        out[o] = (char)(str_hex_digit(p[i + 1]) * 16 + str_hex_digit(p[i + 2]));
        if (!out[o])
            *nul = true;
        o++;
        i += 2;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

/*
 * Decode the raw query string 'q' (NULL: none) into at most 'max' pairs: 'names[i]' and
 * 'values[i]' (arena 'a'), '*n' of them. Empty pairs ("a&&b") are skipped; a pair without '='
 * has the value "". Returns 0, or ERR_LIMIT ("uri_too_long": more than 'max' pairs) or
 * ERR_INVALID ("invalid_request": a bad escape, %00 or invalid UTF-8; 'param' is the name when
 * the name itself is sound) with 'e' set.
 */
int router_query_parse(const char *q, struct arena *a, size_t max, const char **names,
                       const char **values, size_t *n, struct err *e)
{
    *n = 0;
    while (q && *q) {
        const char *end = strchr(q, '&');
        const char *eq;
        size_t len = end ? (size_t)(end - q) : strlen(q), nlen, vlen;
        char *name, *value;
        bool nul_n, nul_v;

        if (len == 0) {
            q++;
            continue;
        }
        if (*n >= max)
            return err_set(e, ERR_LIMIT, "uri_too_long", NULL,
                           "Too many query parameters (at most %zu).", max);
        eq = memchr(q, '=', len);
        name = decode(a, q, eq ? (size_t)(eq - q) : len, &nlen, &nul_n);
        if (!name || nul_n || !utf8_valid(name, nlen))
            return err_set(e, ERR_INVALID, "invalid_request", NULL,
                           "Invalid query parameter name: percent escapes must be two hex "
                           "digits, not %%00, and decode to UTF-8.");
        value = eq ? decode(a, eq + 1, len - (size_t)(eq - q) - 1, &vlen, &nul_v) : NULL;
        if (eq && (!value || nul_v || !utf8_valid(value, vlen)))
            return err_set(e, ERR_INVALID, "invalid_request", name,
                           "Invalid %.80s: percent escapes must be two hex digits, not %%00, "
                           "and decode to UTF-8.",
                           name);
        names[*n] = name;
        values[*n] = value ? value : "";
        (*n)++;
        q += len;
        if (*q)
            q++;
    }
    return 0;
}
