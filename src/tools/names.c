/* SPDX-License-Identifier: MIT */
/*
 * names.c: the name a tool is shown to a model under. Our tool names use '.' between segments
 * ("slack.post_message", "mcp.crm.find_contact"); OpenAI's function names allow only
 * [a-zA-Z0-9_-], 1 to 64 of them. Each '.' becomes "__", which reads back one way as long as
 * the name itself holds no "__", "_." or "._". Any other name (and an empty one, or one with a
 * byte a model name cannot hold), and any that comes out longer than 64 bytes, is cut and takes
 * a digest of the whole name, so two names stay apart. The mapping depends on the name only:
 * every turn and every node shows a tool under the same name.
 */
#include "tools.h"

#include "../core/crypto.h"

#include <stdbool.h>
#include <string.h>

#define CUT 55 /* bytes kept before "_" and 8 hex digits: 55 + 1 + 8 = 64 */

static bool model_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* See tools.h. */
void tools_model_name(const char *name, char out[TOOLS_MODEL_NAME_MAX + 1])
{
    size_t len = strlen(name), n = 0, mapped = 0;
    bool hashed = len == 0;
    unsigned char digest[CRYPTO_SHA256_LEN];
    char hex[2 * 4 + 1];

    for (size_t i = 0; i < len; i++) {
        char c = name[i], next = i + 1 < len ? name[i + 1] : '\0';
        const char *to = c == '.' ? "__" : model_char(c) ? &name[i] : "_";
        size_t k = c == '.' ? 2 : 1;

        if ((c == '_' && (next == '_' || next == '.')) || (c == '.' && next == '_'))
            hashed = true; /* could be read two ways */
        if (c != '.' && !model_char(c))
            hashed = true; /* written as '_': the digest tells it apart */
        for (size_t j = 0; j < k && n < TOOLS_MODEL_NAME_MAX; j++)
            out[n++] = to[j];
        mapped += k;
    }
    if (mapped > TOOLS_MODEL_NAME_MAX)
        hashed = true;
    if (hashed) {
        if (n > CUT)
            n = CUT;
        crypto_sha256(name, len, digest);
        crypto_hex(digest, 4, hex);
        out[n++] = '_';
        memcpy(out + n, hex, 8);
        n += 8;
    }
    out[n] = '\0';
}

/* See tools.h. */
void tools_shown_name(const char *name, char out[TOOLS_MODEL_NAME_MAX + 1])
{
    size_t len = strlen(name);
    bool plain = len >= 1 && len <= TOOLS_MODEL_NAME_MAX;

    for (size_t i = 0; plain && i < len; i++)
        plain = model_char(name[i]);
    if (!plain) {
        tools_model_name(name, out);
        return;
    }
    memcpy(out, name, len + 1);
}
