/* SPDX-License-Identifier: MIT */
/*
 * fuzz_json_validate: a value checked against a schema someone else wrote (json/validate.c).
 * The input is two JSON texts separated by a NUL byte: the schema, then the value (a missing
 * second part checks the schema against itself). Whatever they hold, jv_check() returns 0 or
 * ERR_INVALID with a NUL-terminated reason, gives the same answer twice, and never recurses
 * deeper than its bound. Pure: no I/O.
 */
#include "../../src/json/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_json_validate: check failed at line %d: %s\n", __LINE__, #c);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const char *nul = memchr(p, 0, size);
    size_t first = nul ? (size_t)(nul - p) : size;
    json_t *schema = json_loadb(p, first, JSON_DECODE_ANY, NULL);
    json_t *value =
        nul ? json_loadb(nul + 1, size - first - 1, JSON_DECODE_ANY, NULL) : json_incref(schema);
    char why[300], again[300];
    int rc, rc2;

    if (schema && value) {
        rc = jv_check(schema, value, why, sizeof(why));
        CHECK(rc == 0 || rc == ERR_INVALID);
        CHECK(memchr(why, 0, sizeof(why)) != NULL);
        rc2 = jv_check(schema, value, again, sizeof(again));
        CHECK(rc2 == rc);
        CHECK(rc == 0 || strcmp(why, again) == 0);
    }
    json_decref(schema);
    json_decref(value);
    return 0;
}
