/* SPDX-License-Identifier: MIT */
/*
 * id: base62 from the CSPRNG by rejection sampling (bytes >= 248 are redrawn), so every
 * character is uniform.
 *
 * Secrets (API keys, tokens, OAuth states) take their bytes straight from the CSPRNG
 * (id_base62). Identifiers (id_new: request ids, resource ids) take theirs from a per-thread
 * block of CSPRNG output refilled 4 KiB at a time: one RAND_bytes call per request cost
 * 1.8 to 2.8 µs under load (docs/performance.md); one per ~150 ids costs nothing. A forked
 * child drops its copy of the block, so parent and child never hand out the same bytes.
 *
 * An identifier starts with its creation time: ID_TIME_LEN base62 characters of the wall clock
 * in milliseconds, most significant first (the alphabet is in byte order, so a later id sorts
 * after an earlier one), then ID_RANDOM_LEN - ID_TIME_LEN random ones (16: 95 bits). Ids are
 * still opaque to clients; what the order buys is that each table's index of its ids grows at
 * its end, so the rows a busy minute adds share a few pages instead of one page each (a chat
 * writes fewer pages: docs/performance.md).
 */
#include "id.h"

#include "clock.h"
#include "crypto.h"
#include "err.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* Write 'n' uniform random base62 characters and a NUL into 'out' (n+1 bytes). */
int id_base62(char *out, size_t n)
{
    unsigned char pool[64];
    size_t have = 0, used = 0;

    for (size_t i = 0; i < n;) {
        unsigned char c;
        if (used == have) {
            if (crypto_random(pool, sizeof(pool)))
                return ERR_INTERNAL;
            have = sizeof(pool);
            used = 0;
        }
        c = pool[used++];
        if (c >= 248)
            continue;
        out[i++] = alphabet[c % 62];
    }
    out[n] = '\0';
    return 0;
}

#define BLOCK 4096

static _Thread_local unsigned char block[BLOCK];
static _Thread_local size_t block_used = BLOCK; /* BLOCK: empty */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void drop_block(void)
{
    block_used = BLOCK; /* runs in the child, whose only thread is the one that forked */
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, drop_block);
}

/* Write a new id "<prefix>_<24 base62>" into 'out' of 'outn' bytes. */
int id_new(const char *prefix, char *out, size_t outn)
{
    size_t pl = strlen(prefix);
    char *p;

    if (pl + 1 + ID_RANDOM_LEN + 1 > outn)
        return ERR_INTERNAL;
    pthread_once(&atfork_once, register_atfork);
    memcpy(out, prefix, pl);
    out[pl] = '_';
    p = out + pl + 1;
    {
        int64_t t = clock_now_ms();
        uint64_t v = t > 0 ? (uint64_t)t : 0;
        for (size_t i = ID_TIME_LEN; i-- > 0;) {
            p[i] = alphabet[v % 62];
            v /= 62;
        }
    }
    for (size_t i = ID_TIME_LEN; i < ID_RANDOM_LEN;) {
        unsigned char c;
        if (block_used == BLOCK) {
            if (crypto_random(block, BLOCK))
                return ERR_INTERNAL;
            block_used = 0;
        }
        c = block[block_used];
        block[block_used++] = 0; /* a byte is handed out once */
        if (c >= 248)
            continue;
        p[i++] = alphabet[c % 62];
    }
    p[ID_RANDOM_LEN] = '\0';
    return 0;
}

/* True when the 'n' bytes at 's' are all base62. */
bool id_is_base62(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
            return false;
    }
    return true;
}

/* True when 'id' is "<prefix>_" followed by 20 to 40 base62 characters. */
bool id_valid(const char *id, const char *prefix)
{
    size_t pl = strlen(prefix), n = strlen(id);
    if (n < pl + 1 + 20 || n > pl + 1 + 40 || memcmp(id, prefix, pl) != 0 || id[pl] != '_')
        return false;
    return id_is_base62(id + pl + 1, n - pl - 1);
}
