/* SPDX-License-Identifier: MIT */
/*
 * fuzz_redis_url: WORKFORCE_REDIS_URL (ratelimit/redis_url.c). Any input is parsed without a
 * crash; an accepted one starts with "redis://", names a host of allowed characters, a port in
 * 1..65535 and a database in 0..15, and every part fits its field. Rebuilding a URL from the
 * parts (escaping the user and password) parses to the same parts again.
 * Pure: no I/O.
 */
#include "../../src/ratelimit/redis.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_redis_url: check failed at line %d: %s\n", __LINE__, #c);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Append 's' to 'out' (at *k) with every byte outside [A-Za-z0-9] as %XX. */
static void escape(const char *s, char *out, size_t *k)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            out[(*k)++] = (char)c;
        else
            *k += (size_t)snprintf(out + *k, 4, "%%%02X", c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ratelimit_redis_url u, again;
    static char url[4096];
    size_t k = 0;

    if (ratelimit_redis_url_parse((const char *)data, size, &u) != 0)
        return 0;
    CHECK(size >= 8 && memcmp(data, "redis://", 8) == 0);
    CHECK(u.host[0] && strlen(u.host) < sizeof(u.host));
    CHECK(u.port >= 1 && u.port <= 65535);
    CHECK(u.db >= 0 && u.db <= 15);
    CHECK(strlen(u.user) < sizeof(u.user) && strlen(u.password) < sizeof(u.password));
    CHECK(!u.user[0] || u.password[0]); /* a user comes with a password */

    k = (size_t)snprintf(url, sizeof(url), "redis://");
    if (u.password[0]) {
        escape(u.user, url, &k);
        url[k++] = ':';
        escape(u.password, url, &k);
        url[k++] = '@';
    }
    k += (size_t)snprintf(url + k, sizeof(url) - k, strchr(u.host, ':') ? "[%s]:%d/%d" : "%s:%d/%d",
                          u.host, u.port, u.db);
    CHECK(ratelimit_redis_url_parse(url, k, &again) == 0);
    CHECK(strcmp(again.host, u.host) == 0 && again.port == u.port && again.db == u.db);
    CHECK(strcmp(again.user, u.user) == 0 && strcmp(again.password, u.password) == 0);
    return 0;
}
