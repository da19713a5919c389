/* SPDX-License-Identifier: MIT */
/*
 * fuzz_token: integ_token_parse() (integrations/oauth.c), the reader of a token endpoint's
 * answer, which comes from a server on the network. The first two bytes are the HTTP status
 * (mod 600), the rest the body. Either it answers 0 with a non-empty access token, an expiry
 * from 0 to 100 years and NUL-free strings, or ERR_UPSTREAM with a code and a reason and
 * nothing kept. Pure: the arena is released.
 */
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/integrations/oauth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_token: check failed at line %d: %s\n", __LINE__, #c);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena a;
    struct integ_token t;
    char code[64], why[256];
    long status;
    int rc;

    if (size < 2)
        return 0;
    status = (long)((data[0] << 8 | data[1]) % 600);
    arena_init(&a);
    rc = integ_token_parse(status, (const char *)data + 2, size - 2, &a, &t, code, sizeof(code),
                           why, sizeof(why));
    if (rc == 0) {
        CHECK(status >= 200 && status <= 299);
        CHECK(t.access_token && *t.access_token);
        CHECK(t.expires_in >= 0 && t.expires_in <= 100LL * 365 * 86400);
    } else {
        CHECK(rc == ERR_UPSTREAM);
        CHECK(t.access_token == NULL && t.refresh_token == NULL && t.account == NULL);
        CHECK(code[0] != '\0' && why[0] != '\0');
    }
    arena_cleanup(&a);
    return 0;
}
