/* SPDX-License-Identifier: MIT */
/*
 * url.c: the check of a webhook endpoint URL, when a client registers it and again before each
 * delivery. Pure: no I/O, no allocation, slices into the caller's buffer.
 *
 * The check is strict where URL parsers disagree, so that what we accept means one thing to
 * every reader (WHATWG, RFC 3986, libcurl, getaddrinfo): printable ASCII only (no spaces, no
 * backslash), no user info, no fragment, and a host that is a DNS name, a strict dotted-quad
 * IPv4 address or a bracketed IPv6 literal without a zone. A name whose last label is a number
 * ("2130706433", "127.1", "0x7f.1") is an IPv4 address to browsers and to inet_aton(), so it
 * must then be a dotted quad. The address a name resolves to is judged at connect time, not
 * here (addr.c, client.c): this check keeps URLs unambiguous, it does not stop rebinding.
 */
#include "hook.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ERR_INVALID with "Invalid <param>: <msg>." */
static int bad(struct err *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct err *e, const char *param, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(e, ERR_INVALID, "invalid_request", param, "Invalid %s: %s.",
                   param ? param : "url", msg);
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_label_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}

/* True when the 'len' bytes at 'p' start case-insensitively with 'prefix'. */
static bool starts_nocase(const char *p, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != prefix[i])
            return false;
    }
    return true;
}

/* True when the label is a number to an IPv4 parser: decimal digits, or 0x and hex digits. */
static bool numeric_label(const char *p, size_t n)
{
    size_t i = 0;
    bool hex = n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    if (hex)
        i = 2;
    if (i == n)
        return hex; /* "0x" alone counts (WHATWG reads it as 0) */
    for (; i < n; i++) {
        if (hex ? str_hex_digit(p[i]) < 0 : !is_digit(p[i]))
            return false;
    }
    return true;
}

/* True when the 'n' bytes at 'p' are four decimal parts 0..255 without leading zeros. */
static bool dotted_quad(const char *p, size_t n)
{
    int parts = 0;
    size_t i = 0;
    while (i <= n && parts < 4) {
        size_t start = i;
        unsigned v = 0;
        while (i < n && is_digit(p[i]) && i - start < 3) {
            v = v * 10 + (unsigned)(p[i] - '0');
            i++;
        }
        if (i == start || v > 255 || (i - start > 1 && p[start] == '0'))
            return false;
        parts++;
        if (i == n)
            break;
        if (p[i] != '.')
            return false;
        i++;
    }
    return parts == 4 && i == n;
}

/* Check a host name (not bracketed): DNS labels, or a dotted quad when it reads as IPv4. */
static int check_name(const char *p, size_t n, const char *param, struct err *e)
{
    size_t start = 0, last = 0;
    if (n > 0 && p[n - 1] == '.')
        n--; /* the root label: "example.com." */
    if (n == 0 || n > 253)
        return bad(e, param, "the host must be a DNS name or an IP address");
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') {
            if (!is_label_char(p[i]))
                return bad(e, param, "the host must be a DNS name or an IP address");
            continue;
        }
        if (i == start || i - start > 63 || p[start] == '-' || p[i - 1] == '-')
            return bad(e, param, "the host must be a DNS name or an IP address");
        last = start;
        start = i + 1;
    }
    if (numeric_label(p + last, n - last) && !dotted_quad(p, n))
        return bad(e, param, "a numeric host must be a dotted-quad IPv4 address");
    return 0;
}

/* Check the bracketed IPv6 literal 'p' ('n' bytes, brackets excluded). */
static int check_v6(const char *p, size_t n, const char *param, struct err *e)
{
    char s[64];
    unsigned char addr[16];
    if (n == 0 || n >= sizeof(s) || memchr(p, '%', n))
        return bad(e, param, "the host must be a DNS name or an IP address");
    memcpy(s, p, n);
    s[n] = '\0';
    if (inet_pton(AF_INET6, s, addr) != 1)
        return bad(e, param, "the host must be a DNS name or an IP address");
    return 0;
}

/* Parse the port digits 'p' ('n' bytes) into '*out': 1..65535. */
static int check_port(const char *p, size_t n, int *out, const char *param, struct err *e)
{
    long v = 0;
    if (n == 0 || n > 5)
        return bad(e, param, "the port must be 1 to 65535");
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return bad(e, param, "the port must be 1 to 65535");
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return bad(e, param, "the port must be 1 to 65535");
    *out = (int)v;
    return 0;
}

/* Check the authority 'p' ('n' bytes, between "//" and the path) into 'u'. */
static int parse_authority(const char *p, size_t n, struct httpc_hook_url *u, const char *param,
                           struct err *e)
{
    const char *colon = NULL;
    int rc;

    if (n == 0)
        return bad(e, param, "must name a host");
    if (memchr(p, '@', n))
        return bad(e, param, "must not contain a user name or password");
    if (p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (!close)
            return bad(e, param, "the host must be a DNS name or an IP address");
        u->host.p = p + 1;
        u->host.len = (size_t)(close - p - 1);
        rc = check_v6(u->host.p, u->host.len, param, e);
        if (rc)
            return rc;
        if (close + 1 < p + n && close[1] != ':')
            return bad(e, param, "the host must be a DNS name or an IP address");
        colon = close + 1 < p + n ? close + 1 : NULL;
    } else {
        colon = memchr(p, ':', n);
        u->host.p = p;
        u->host.len = colon ? (size_t)(colon - p) : n;
        if (u->host.len == 0)
            return bad(e, param, "must name a host");
        rc = check_name(u->host.p, u->host.len, param, e);
        if (rc)
            return rc;
    }
    u->port = u->https ? 443 : 80;
    if (colon)
        return check_port(colon + 1, (size_t)(p + n - colon - 1), &u->port, param, e);
    return 0;
}

/*
 * Check the 'len' bytes of 'url' as a webhook endpoint URL (see hook.h and the top of this
 * file). On success fills 'out' (may be NULL) with slices into 'url' and returns 0. Otherwise
 * returns ERR_INVALID and sets 'e' (may be NULL) to code "invalid_request", param 'param' and a
 * message "Invalid <param>: <why>." that quotes nothing of the URL.
 */
int httpc_hook_url_parse(const char *url, size_t len, struct httpc_hook_url *out, const char *param,
                         struct err *e)
{
    struct httpc_hook_url u;
    size_t i, auth;
    int rc;

    memset(&u, 0, sizeof(u));
    if (len > HTTPC_HOOK_URL_MAX)
        return bad(e, param, "must be at most %d characters", HTTPC_HOOK_URL_MAX);
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)url[i];
        if (c <= ' ' || c >= 0x7f)
            return bad(e, param,
                       "must be printable ASCII without spaces (percent-encode other characters)");
        if (c == '\\')
            return bad(e, param, "must not contain a backslash");
        if (c == '#')
            return bad(e, param, "must not contain a fragment (#)");
    }
    if (starts_nocase(url, len, "https://")) {
        u.https = true;
        i = 8;
    } else if (starts_nocase(url, len, "http://")) {
        i = 7;
    } else {
        return bad(e, param, "must be an absolute http:// or https:// URL");
    }
    for (auth = i; auth < len && url[auth] != '/' && url[auth] != '?'; auth++)
        ;
    rc = parse_authority(url + i, auth - i, &u, param, e);
    if (rc)
        return rc;
    u.rest.p = url + auth;
    u.rest.len = len - auth;
    if (out)
        *out = u;
    return 0;
}
