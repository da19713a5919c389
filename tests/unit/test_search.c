/* SPDX-License-Identifier: MIT */
/*
 * test_search: the FTS5 query made from user text (hardening finding 10). Whatever the text, the
 * query is well formed ("t" OR "t" ...: every term whole and quoted), has at most 64 distinct
 * terms of at most 64 bytes, and never grows with the text: a 32,000-character chat message
 * once made a query cut at 64 KiB, which FTS5 refused as a syntax error.
 */
#include "../../src/knowledge/search.h"
#include "../../src/core/mem.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

/* "t" OR "t" ...: returns the number of terms, or -1 when the shape is wrong. */
static int shape(const char *q)
{
    int n = 0;
    while (*q) {
        const char *end;
        if (n && strncmp(q, " OR ", 4) != 0)
            return -1;
        if (n)
            q += 4;
        if (*q != '"')
            return -1;
        end = strchr(q + 1, '"');
        if (!end || end == q + 1 || end - q - 1 > 64)
            return -1;
        q = end + 1;
        n++;
    }
    return n;
}

int main(void)
{
    struct arena a;
    unsigned seed = 7;
    arena_init(&a);
    subtest("long messages")
    {
        static const char *const words[] = {"zq", "refund", "\xe4\xb8\x80\xe4\xb8\x81", "the", "a",
                                            "x1", "policy", "\xd0\xb6\xd0\xb6"};
        for (int round = 0; round < 50; round++) {
            size_t cap = 96 * 1024, n = 0;
            char *msg = xmalloc(cap + 1);
            const char *q;
            int terms;
            while (n + 80 < cap) {
                seed = seed * 1103515245u + 12345u;
                n += (size_t)snprintf(msg + n, cap - n, "%s%u%s ", words[(seed >> 16) % 8],
                                      (seed >> 8) % (round * 100 + 1),
                                      (seed & 1) ? "" : words[(seed >> 20) % 8]);
            }
            msg[n] = '\0';
            q = knowledge_fts_query(&a, msg);
            terms = q ? shape(q) : 0;
            ok(terms > 0 && terms <= 64, "a bounded, well-formed query");
            ok(!q || strlen(q) <= 64 * 70, "its size does not grow with the text");
            free(msg);
        }
    }
    subtest("words")
    {
        const char *q = knowledge_fts_query(&a, "What is the refund policy? refund REFUND");
        is_str(q, "\"refund\" OR \"policy\"", "stopwords out, duplicates once");
        q = knowledge_fts_query(&a, "the a of");
        ok(q == NULL, "only stopwords: no query");
        {
            char longword[200];
            memset(longword, 'a', 150);
            memcpy(longword + 150, " short", 7);
            q = knowledge_fts_query(&a, longword);
            is_str(q, "\"short\"", "a word over 64 bytes is skipped, never cut");
        }
    }
    arena_cleanup(&a);
    return done_testing();
}
