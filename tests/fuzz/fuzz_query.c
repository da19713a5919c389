/* SPDX-License-Identifier: MIT */
/*
 * fuzz_query: the small decoders between a request (or the environment) and a handler.
 * The input is text; its first line is an HTTP method and the rest a path for router_match()
 * against the real route table, and the whole input, each line and each token (split at
 * " ,:/&=?") go through the other parsers:
 *   - router_match: a match has the method, and the pattern with its {params} filled in gives
 *     the path back; a miss lists in 'allow' exactly methods that do match the path.
 *   - str_to_u64 / str_to_i64: success iff a reference parse agrees, and the value reprints
 *     to the same digits (leading zeros and "-0" aside).
 *   - auth_bearer_parse: success only for "Bearer " (any case) and a well-formed key, which
 *     is returned as a slice of the header.
 *   - config_parse_rate_limits: values within 1..1000000, untouched tiers kept, the table
 *     reprints and reparses to itself; a failure leaves 'out' untouched.
 *   - config_parse_duration: value reprints with its unit and reparses to the same ms.
 *   - clock_parse_iso: for years 0..9999, clock_fmt_iso() of the result parses to the same ms,
 *     and a canonical "YYYY-MM-DDTHH:MM:SS.mmmZ" input formats back to itself.
 *   - router_cookie_value (the input as a Cookie header): a value found is non-empty, shorter
 *     than the buffer, holds no ';', and appears in the header right after "name=".
 *   - router_ip_trusted / router_forwarded_client (the input as a list of proxies and as an
 *     X-Forwarded-For header): the client is the peer, or an address of the header that
 *     parses; an untrusted peer is always the answer.
 * Pure: no I/O; the arena is released.
 */
#include "../../src/auth/auth.h"
#include "../../src/core/clock.h"
#include "../../src/core/config.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/core/str.h"
#include "../../src/core/utf8.h"
#include "../../src/api/api.h"
#include "../../src/router/router.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_query: check failed at line %d: %s\n", __LINE__, #c);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define PARAM_MAX 4096 /* longest {param} segment match.c accepts */
#define MAX_SLICE 256  /* longer slices only go to the parsers that take lengths */

/* ---- router_match ---- */

/* Fill the {params} of 'pat' with 'params'; false when it does not fit 'out'. */
static bool fill_pattern(const char *pat, const char *const *params, char *out, size_t cap)
{
    size_t o = 0, np = 0;
    while (*pat) {
        const char *piece = pat;
        size_t len = 1;
        if (*pat == '{') {
            const char *close = strchr(pat, '}');
            CHECK(close && np < ROUTER_MAX_PARAMS && params[np]);
            piece = params[np++];
            len = strlen(piece);
            pat = close + 1;
        } else {
            pat++;
        }
        if (o + len >= cap)
            return false;
        memcpy(out + o, piece, len);
        o += len;
    }
    out[o] = '\0';
    return true;
}

static size_t count_params(const char *pat)
{
    size_t n = 0;
    for (; *pat; pat++)
        n += *pat == '{';
    return n;
}

static void check_match(struct arena *a, const char *method, const char *path)
{
    struct router_match m;
    router_match(api_routes, api_nroutes, method, path, a, &m);
    CHECK(m.route >= -1 && m.route < (int)api_nroutes);
    CHECK(memchr(m.allow, '\0', sizeof(m.allow)) != NULL);
    if (m.route >= 0) {
        const struct route *r = &api_routes[m.route];
        size_t np = count_params(r->pattern);
        char *rebuilt = arena_alloc(a, strlen(path) + 1);
        CHECK(strcmp(r->method, method) == 0);
        for (size_t i = 0; i < np; i++) {
            size_t l;
            CHECK(m.params[i] != NULL);
            l = strlen(m.params[i]);
            CHECK(l >= 1 && l <= PARAM_MAX && strchr(m.params[i], '/') == NULL);
        }
        for (size_t i = np; i < ROUTER_MAX_PARAMS; i++)
            CHECK(m.params[i] == NULL);
        CHECK(fill_pattern(r->pattern, m.params, rebuilt, strlen(path) + 1));
        CHECK(strcmp(rebuilt, path) == 0);
        /* The first route in table order wins. */
        for (int i = 0; i < m.route; i++)
            CHECK(strcmp(api_routes[i].method, method) != 0 ||
                  strcmp(api_routes[i].pattern, r->pattern) != 0);
        return;
    }
    for (size_t i = 0; i < ROUTER_MAX_PARAMS; i++)
        CHECK(m.params[i] == NULL);
    if (m.allow[0]) {
        /* Every listed method matches this path, and the request's method is not listed. */
        char list[sizeof(m.allow)];
        char *save = NULL;
        memcpy(list, m.allow, sizeof(list));
        for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            struct router_match m2;
            CHECK(strcmp(tok, method) != 0);
            router_match(api_routes, api_nroutes, tok, path, a, &m2);
            CHECK(m2.route >= 0);
        }
    } else {
        /* 404: no method of the table has this path. */
        for (size_t i = 0; i < api_nroutes; i++) {
            struct router_match m2;
            if (strcmp(api_routes[i].method, method) == 0)
                continue;
            router_match(api_routes, api_nroutes, api_routes[i].method, path, a, &m2);
            CHECK(m2.route < 0 && m2.allow[0] == '\0');
        }
    }
}

/* ---- numbers ---- */

/* Reference: 1..20 digits whose value fits in 64 bits. */
static bool ref_u64(const char *s, size_t len)
{
    static const char max[] = "18446744073709551615";
    size_t z = 0;
    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
    }
    while (z < len - 1 && s[z] == '0')
        z++;
    if (len - z < 20)
        return true;
    return memcmp(s + z, max, 20) <= 0;
}

/* The digits of 's' without leading zeros ("0" for all zeros). */
static void strip_zeros(const char *s, size_t len, const char **p, size_t *n)
{
    while (len > 1 && *s == '0')
        s++, len--;
    *p = s;
    *n = len;
}

static void check_numbers(const char *s, size_t len)
{
    struct str in = {s, len};
    uint64_t u = 0;
    int64_t v = 0;
    char buf[32];
    const char *d;
    size_t dn;
    int rc = str_to_u64(in, &u);
    bool neg;

    CHECK((rc == 0) == ref_u64(s, len));
    if (rc == 0) {
        snprintf(buf, sizeof(buf), "%" PRIu64, u);
        strip_zeros(s, len, &d, &dn);
        CHECK(strlen(buf) == dn && memcmp(buf, d, dn) == 0);
    } else {
        CHECK(rc == ERR_INVALID);
    }

    rc = str_to_i64(in, &v);
    neg = len > 0 && s[0] == '-';
    if (rc == 0) {
        const char *digits = neg ? s + 1 : s;
        size_t nd = neg ? len - 1 : len;
        CHECK(ref_u64(digits, nd));
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        strip_zeros(digits, nd, &d, &dn);
        if (v < 0) {
            CHECK(neg && buf[0] == '-');
            CHECK(strlen(buf + 1) == dn && memcmp(buf + 1, d, dn) == 0);
        } else {
            CHECK(!neg || v == 0);
            CHECK(strlen(buf) == dn && memcmp(buf, d, dn) == 0);
        }
    } else {
        CHECK(rc == ERR_INVALID);
        /* Refused: not digits, or a magnitude beyond int64. */
        if (!neg && ref_u64(s, len))
            CHECK(u > (uint64_t)INT64_MAX);
        if (neg && ref_u64(s + 1, len - 1)) {
            struct str mag = {s + 1, len - 1};
            CHECK(str_to_u64(mag, &u) == 0 && u > (uint64_t)INT64_MAX + 1);
        }
    }
}

/* ---- auth ---- */

static bool base62(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return false;
    }
    return true;
}

static void check_bearer(const char *header)
{
    const char *key = NULL;
    size_t keylen = 0;
    int mode = -1;
    int rc = auth_bearer_parse(header, &key, &keylen, &mode);
    if (rc) {
        CHECK(rc == ERR_AUTH);
        return;
    }
    CHECK(strncasecmp(header, "Bearer ", 7) == 0);
    CHECK(key == header + 7 && keylen == strlen(header) - 7);
    CHECK(mode == 0 || mode == 1);
    CHECK(memcmp(key, mode ? "svc_test_sk_" : "svc_live_sk_", 12) == 0);
    CHECK(keylen >= 12 + 32 && keylen <= 12 + 64 && base62(key + 12, keylen - 12));
}

/* ---- config ---- */

static const struct config_limits base_limits[TIER_COUNT] = {
    {7, 8, 9},
    {70, 80, 90},
    {700, 800, 900},
};

static bool mentions(const char *s, size_t len, const char *tier)
{
    size_t tl = strlen(tier);
    for (size_t i = 0; i + tl < len; i++) {
        if ((i == 0 || s[i - 1] == ',') && memcmp(s + i, tier, tl) == 0 && s[i + tl] == ':')
            return true;
    }
    return false;
}

static void check_rate_limits(const char *s, size_t len)
{
    struct config_limits out[TIER_COUNT], again[TIER_COUNT];
    struct err e;
    char text[256];
    int rc;

    memcpy(out, base_limits, sizeof(out));
    err_clear(&e);
    rc = config_parse_rate_limits(s, len, out, &e);
    if (rc) {
        CHECK(rc == ERR_INVALID && e.kind == ERR_INVALID);
        CHECK(strcmp(e.param, "WORKFORCE_RATE_LIMITS") == 0);
        CHECK(memcmp(out, base_limits, sizeof(out)) == 0);
        return;
    }
    for (int t = 0; t < TIER_COUNT; t++) {
        const struct config_limits *l = &out[t];
        CHECK(l->per_minute >= 1 && l->per_minute <= 1000000);
        CHECK(l->burst >= 1 && l->burst <= 1000000);
        CHECK(l->concurrent >= 1 && l->concurrent <= 1000000);
        if (!mentions(s, len, config_tier_name((enum config_tier)t)))
            CHECK(memcmp(l, &base_limits[t], sizeof(*l)) == 0);
    }
    snprintf(text, sizeof(text), "starter:%u/%u/%u,manager:%u/%u/%u,agency:%u/%u/%u",
             out[0].per_minute, out[0].burst, out[0].concurrent, out[1].per_minute, out[1].burst,
             out[1].concurrent, out[2].per_minute, out[2].burst, out[2].concurrent);
    memset(again, 0, sizeof(again));
    CHECK(config_parse_rate_limits(text, strlen(text), again, NULL) == 0);
    CHECK(memcmp(again, out, sizeof(out)) == 0);
}

static void check_duration(const char *s, size_t len)
{
    static const struct {
        char unit;
        int64_t ms;
    } units[] = {{'d', 86400000}, {'h', 3600000}, {'m', 60000}, {'s', 1000}};
    int64_t ms = -1, again = -1;
    char text[40];

    if (config_parse_duration(s, len, &ms))
        return;
    CHECK(ms >= 1000 && ms <= 3650LL * 86400000);
    CHECK(len >= 2);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (s[len - 1] == units[i].unit) {
            CHECK(ms % units[i].ms == 0);
            snprintf(text, sizeof(text), "%" PRId64 "%c", ms / units[i].ms, units[i].unit);
            CHECK(config_parse_duration(text, strlen(text), &again) == 0 && again == ms);
            /* Every duration is also a whole number of seconds. */
            snprintf(text, sizeof(text), "%" PRId64 "s", ms / 1000);
            CHECK(config_parse_duration(text, strlen(text), &again) == 0 && again == ms);
            return;
        }
    }
    CHECK(0); /* accepted with a unit we do not know */
}

/* ---- clock ---- */

static void check_iso(const char *s, size_t len)
{
    int64_t ms, again = 0;
    char text[64];
    int64_t lo = clock_days_from_civil(0, 1, 1) * 86400000;
    int64_t hi = clock_days_from_civil(10000, 1, 1) * 86400000;

    if (clock_parse_iso(s, len, &ms))
        return;
    if (ms < lo || ms >= hi)
        return;
    clock_fmt_iso(ms, text, sizeof(text));
    CHECK(strlen(text) == 24);
    CHECK(clock_parse_iso(text, strlen(text), &again) == 0);
    CHECK(again == ms);
    if (len == 24 && s[10] == 'T' && s[23] == 'Z' && s[19] == '.')
        CHECK(memcmp(text, s, 24) == 0);
}

/* ---- a person's request (people.c) ---- */

static void check_people(const char *z)
{
    char v[64], ip[ROUTER_IP_MAX];
    unsigned char probe[16];

    if (router_cookie_value(z, "wf_session", v, sizeof(v))) {
        char *at;
        CHECK(v[0] && strlen(v) < sizeof(v) && !strchr(v, ';'));
        at = strstr(z, "wf_session=");
        CHECK(at != NULL);
    }
    router_forwarded_client(z, "127.0.0.1, 10.0.0.0/8, ::1", "127.0.0.1", ip);
    CHECK(strcmp(ip, "127.0.0.1") == 0 ||
          inet_pton(strchr(ip, ':') ? AF_INET6 : AF_INET, ip, probe) == 1);
    CHECK(strcmp(ip, "127.0.0.1") == 0 || strstr(z, ip) != NULL);
    router_forwarded_client(z, "", "192.0.2.1", ip);
    CHECK(strcmp(ip, "192.0.2.1") == 0);
    router_forwarded_client("198.51.100.1", z, "198.51.100.2", ip);
    CHECK(strcmp(ip, "198.51.100.2") == 0 || strcmp(ip, "198.51.100.1") == 0);
    (void)router_ip_trusted(z, "10.1.2.3");
    (void)router_ip_trusted(z, "fd00::1");
}

/* ---- driver ---- */

static void check_slice(struct arena *a, const char *s, size_t len)
{
    char *z;

    check_rate_limits(s, len);
    check_duration(s, len);
    check_iso(s, len);
    if (len > MAX_SLICE)
        return;
    check_numbers(s, len);
    z = arena_strndup(a, s, len);
    check_bearer(z);
    check_people(z);
}

/* ---- router_query_parse ---- */

/*
 * The query decoder on the whole path: success iff every pair is within the limit and decodes;
 * then every name and value is UTF-8 without NUL, and re-encoding every byte as %XX decodes to
 * the same pairs.
 */
static void check_query_parse(struct arena *a, const char *q)
{
    const char *names[ROUTER_MAX_QUERY], *values[ROUTER_MAX_QUERY];
    const char *n2[ROUTER_MAX_QUERY], *v2[ROUTER_MAX_QUERY];
    size_t n = 0, m = 0, len = 0;
    struct err e;
    char *enc;
    int rc = router_query_parse(q, a, ROUTER_MAX_QUERY, names, values, &n, &e);

    if (rc) {
        CHECK(rc == ERR_LIMIT || rc == ERR_INVALID);
        return;
    }
    CHECK(n <= ROUTER_MAX_QUERY);
    for (size_t i = 0; i < n; i++)
        len += 3 * (strlen(names[i]) + strlen(values[i])) + 2;
    enc = arena_alloc(a, len + 1);
    len = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(utf8_valid(names[i], strlen(names[i])) && utf8_valid(values[i], strlen(values[i])));
        for (const char *p = names[i]; *p; p++)
            len += (size_t)snprintf(enc + len, 4, "%%%02X", (unsigned char)*p);
        enc[len++] = '=';
        for (const char *p = values[i]; *p; p++)
            len += (size_t)snprintf(enc + len, 4, "%%%02X", (unsigned char)*p);
        enc[len++] = '&';
    }
    enc[len] = '\0';
    CHECK(router_query_parse(enc, a, ROUTER_MAX_QUERY, n2, v2, &m, &e) == 0);
    CHECK(m == n);
    for (size_t i = 0; i < m; i++)
        CHECK(strcmp(n2[i], names[i]) == 0 && strcmp(v2[i], values[i]) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nl = memchr(s, '\n', size);
    struct arena a;
    char *method, *path;

    arena_init(&a);

    /* Route: "METHOD\nPATH" (no newline: the whole input is the path of a GET). */
    if (nl) {
        method = arena_strndup(&a, s, (size_t)(nl - s));
        path = arena_strndup(&a, nl + 1, size - (size_t)(nl - s) - 1);
    } else {
        method = arena_strdup(&a, "GET");
        path = arena_strndup(&a, s, size);
    }
    check_match(&a, method, path);
    check_query_parse(&a, path);

    /* The other parsers: the whole input, then each line, then each token. */
    check_slice(&a, s, size);
    for (size_t i = 0, start = 0; nl && i <= size; i++) {
        if (i == size || s[i] == '\n') {
            check_slice(&a, s + start, i - start);
            start = i + 1;
        }
    }
    for (size_t i = 0, start = 0; i <= size; i++) {
        if (i == size || memchr(" ,:/&=?\n\0", s[i], 9)) { /* NUL splits too */
            if (i > start && i - start < size)
                check_slice(&a, s + start, i - start);
            start = i + 1;
        }
    }

    arena_cleanup(&a);
    return 0;
}
