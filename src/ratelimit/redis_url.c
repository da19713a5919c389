/* SPDX-License-Identifier: MIT */
/*
 * redis_url.c: WORKFORCE_REDIS_URL, parsed without I/O (fuzzed by tests/fuzz/fuzz_redis_url.c).
 *
 *   redis://[[user]:password@]host[:port][/db]
 *
 * host is a name, an IPv4 address or an IPv6 one in brackets; port 1..65535 (6379 when left
 * out); db 0..15 (0). The user and password may carry %XX escapes (a password with '@' or ':').
 * Nothing else is accepted: no query, no fragment, no rediss:// (TLS is not built in).
 */
#include "redis.h"

#include "../core/str.h"

#include <string.h>

/* Copy s[0..n) into out (cap bytes with its NUL), decoding %XX; false when it does not fit,
 * an escape is malformed, or it decodes to a NUL. */
static bool unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (n - i < 3 || str_hex_digit(s[i + 1]) < 0 || str_hex_digit(s[i + 2]) < 0)
                return false;
            c = (char)(str_hex_digit(s[i + 1]) * 16 + str_hex_digit(s[i + 2]));
            i += 2;
        }
        if (c == '\0' || k + 1 >= cap)
            return false;
        out[k++] = c;
    }
    out[k] = '\0';
    return true;
}

/* A decimal number in s[0..n) within [lo, hi]; -1 when it is not. */
static long number(const char *s, size_t n, long lo, long hi)
{
    long v = 0;
    if (n == 0 || n > 5)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < lo || v > hi ? -1 : v;
}

/* A host name or IPv4 address: letters, digits, '-', '.', '_'. */
static bool host_chars(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return false;
    }
    return n > 0;
}

/* See redis.h. */
int ratelimit_redis_url_parse(const char *s, size_t len, struct ratelimit_redis_url *out)
{
    static const char scheme[] = "redis://";
    const char *p, *end = s + len, *at, *host_end, *slash;
    size_t n;

    memset(out, 0, sizeof(*out));
    out->port = 6379;
    if (len < sizeof(scheme) - 1 || memcmp(s, scheme, sizeof(scheme) - 1) != 0 ||
        memchr(s, '\0', len))
        return -1;
    p = s + sizeof(scheme) - 1;
    slash = memchr(p, '/', (size_t)(end - p));
    if (!slash)
        slash = end;
    /* userinfo: up to the last '@' before the path (a password may hold an escaped one) */
    at = NULL;
    for (const char *q = p; q < slash; q++) {
        if (*q == '@')
            at = q;
    }
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            if (!unescape(p, (size_t)(colon - p), out->user, sizeof(out->user)) ||
                !unescape(colon + 1, (size_t)(at - colon - 1), out->password,
                          sizeof(out->password)) ||
                !out->password[0])
                return -1;
        } else if (!unescape(p, (size_t)(at - p), out->password, sizeof(out->password)) ||
                   !out->password[0]) {
            return -1; /* redis://secret@host: the only word is the password */
        }
        p = at + 1;
    }
    /* host, [v6] or name */
    if (p < slash && *p == '[') {
        const char *close = memchr(p, ']', (size_t)(slash - p));
        if (!close || close == p + 1)
            return -1;
        for (const char *q = p + 1; q < close; q++) {
            if (!(str_hex_digit(*q) >= 0 || *q == ':' || *q == '.'))
                return -1;
        }
        n = (size_t)(close - p - 1);
        if (n + 1 > sizeof(out->host))
            return -1;
        memcpy(out->host, p + 1, n);
        out->host[n] = '\0';
        host_end = close + 1;
    } else {
        const char *colon = memchr(p, ':', (size_t)(slash - p));
        host_end = colon ? colon : slash;
        n = (size_t)(host_end - p);
        if (!host_chars(p, n) || n + 1 > sizeof(out->host))
            return -1;
        memcpy(out->host, p, n);
        out->host[n] = '\0';
    }
    if (host_end < slash) {
        long port;
        if (*host_end != ':')
            return -1;
        port = number(host_end + 1, (size_t)(slash - host_end - 1), 1, 65535);
        if (port < 0)
            return -1;
        out->port = (int)port;
    }
    if (slash < end) {
        long db = slash + 1 == end ? 0 : number(slash + 1, (size_t)(end - slash - 1), 0, 15);
        if (db < 0)
            return -1;
        out->db = (int)db;
    }
    return 0;
}
