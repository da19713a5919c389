/* SPDX-License-Identifier: MIT */
/*
 * names.c: the name a model sees a tool under (see tools.h): OpenAI's function names allow
 * letters, digits, '_' and '-' (64 at most), so each '.' becomes "__"; a name that could then
 * be read two ways, or is too long, gets a part of its SHA-256 instead of its tail.
 */
#include "tools.h"

#include "../core/crypto.h"

#include <stdio.h>
#include <string.h>

#define CUT 55 /* bytes kept before "_" and 8 hex digits */

/* See tools.h. */
void tools_model_name(const char *name, char out[TOOLS_MODEL_NAME_MAX + 1])
{
    char full[2 * TOOLS_NAME_MAX + 1];
    size_t n = 0;
    bool ambiguous = strstr(name, "__") || strstr(name, "_.") || strstr(name, "._");

    for (const char *p = name; *p && n + 2 < sizeof(full); p++) {
        if (*p == '.') {
            full[n++] = '_';
            full[n++] = '_';
        } else {
            full[n++] = *p;
        }
    }
    full[n] = 0;
    if (!ambiguous && n > 0 && n <= TOOLS_MODEL_NAME_MAX && strlen(name) <= TOOLS_NAME_MAX) {
        memcpy(out, full, n + 1);
        return;
    }
    {
        unsigned char h[CRYPTO_SHA256_LEN];
        size_t keep = n < CUT ? n : CUT;
        crypto_sha256(name, strlen(name), h);
        memcpy(out, full, keep);
        snprintf(out + keep, TOOLS_MODEL_NAME_MAX + 1 - keep, "_%02x%02x%02x%02x", h[0], h[1], h[2],
                 h[3]);
    }
}
