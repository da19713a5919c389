/* SPDX-License-Identifier: MIT */
/*
 * fuzz_hook_url: webhook endpoint URLs (httpc/url.c). Any input is judged without a crash and
 * without reading past 'size'; a refusal is ERR_INVALID with param "url" and a message
 * "Invalid url: ...". An accepted URL is at most 2048 bytes of printable ASCII without '#' or
 * a backslash (and without '@' before the path: no user info), starts with http:// or https://
 * (as 'https' says), has a non-empty host inside the input and a port in 1..65535; rebuilt
 * from its parts with an explicit port it is accepted again with the same parts. Pure: no I/O.
 */
#include "../../src/httpc/hook.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_hook_url: check failed at line %d: %s\n", __LINE__, #c);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char again[HTTPC_HOOK_URL_MAX + 64];
    const char *s = (const char *)data;
    struct httpc_hook_url u, v;
    struct err e;
    int n;

    err_clear(&e);
    if (httpc_hook_url_parse(s, size, &u, "url", &e) != 0) {
        CHECK(e.kind == ERR_INVALID && strcmp(e.param, "url") == 0);
        CHECK(strncmp(e.msg, "Invalid url: ", 13) == 0);
        return 0;
    }
    CHECK(size <= HTTPC_HOOK_URL_MAX);
    for (size_t i = 0; i < size; i++)
        CHECK(data[i] > ' ' && data[i] < 0x7f && data[i] != '#' && data[i] != '\\');
    CHECK(size >= (u.https ? 8u : 7u));
    CHECK(strncmp(s + (u.https ? 5 : 4), "://", 3) == 0);
    CHECK(u.host.len > 0 && u.host.p > s && u.host.p + u.host.len <= s + size);
    CHECK(u.port >= 1 && u.port <= 65535);
    CHECK(u.rest.p + u.rest.len == s + size);
    CHECK(u.rest.len == 0 || u.rest.p[0] == '/' || u.rest.p[0] == '?');
    CHECK(!memchr(s, '@', (size_t)(u.rest.p - s))); /* '@' only in the path or query */

    n = snprintf(again, sizeof(again),
                 memchr(u.host.p, ':', u.host.len) ? "%s://[%.*s]:%d%.*s" : "%s://%.*s:%d%.*s",
                 u.https ? "https" : "http", (int)u.host.len, u.host.p, u.port, (int)u.rest.len,
                 u.rest.p);
    CHECK(n > 0 && (size_t)n < sizeof(again));
    if ((size_t)n > HTTPC_HOOK_URL_MAX)
        return 0; /* the explicit port made it longer than the limit */
    CHECK(httpc_hook_url_parse(again, (size_t)n, &v, "url", &e) == 0);
    CHECK(v.https == u.https && v.port == u.port && v.host.len == u.host.len &&
          memcmp(v.host.p, u.host.p, u.host.len) == 0 && v.rest.len == u.rest.len &&
          memcmp(v.rest.p, u.rest.p, u.rest.len) == 0);
    return 0;
}
