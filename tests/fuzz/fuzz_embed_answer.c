/* SPDX-License-Identifier: MIT */
/*
 * fuzz_embed_answer: the `/embeddings` answer parser of the openai provider
 * (embed/openai.c, embed_openai_parse), which reads what a remote server sent. The first
 * input byte picks how many inputs were asked for (0..7) and the widest vector allowed
 * (1..64); the rest is the answer. On success every vector is in its place: there are n of
 * one width within the bound, each finite and of unit length; on failure nothing is returned.
 * Pure: no I/O.
 */
#include "../../src/core/err.h"
#include "../../src/embed/embed_int.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_embed_answer: check failed at line %d: %s\n", __LINE__, #c);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    float *v = (float *)(uintptr_t)1;
    size_t n, max_dim, dim = 99;
    struct err e;
    int rc;

    if (size < 1)
        return 0;
    n = data[0] & 7;
    max_dim = 1 + (data[0] >> 3 & 63);
    err_clear(&e);
    rc = embed_openai_parse((const char *)data + 1, size - 1, n, max_dim, &v, &dim, &e);
    if (rc) {
        CHECK(rc == ERR_UPSTREAM);
        CHECK(v == NULL && dim == 0);
        CHECK(e.msg[0] != '\0');
        return 0;
    }
    CHECK(n == 0 || (v != NULL && dim >= 1 && dim <= max_dim));
    for (size_t i = 0; i < n; i++) {
        double ss = 0;
        for (size_t c = 0; c < dim; c++) {
            CHECK(isfinite(v[i * dim + c]));
            ss += (double)v[i * dim + c] * v[i * dim + c];
        }
        CHECK(fabs(ss - 1.0) < 1e-3);
    }
    free(v);
    return 0;
}
