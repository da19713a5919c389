/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of webhooks/secrets.c: the list of secrets an endpoint keeps signing after its
 * rotations. Each rotation puts the replaced secret first with its own end; expired entries and
 * malformed ones are dropped when read; the text of an older version (one secret alone) signs
 * until the endpoint's previous_until; a fifth replaced secret retires the oldest.
 */
#include "../../src/core/mem.h"
#include "../../src/webhooks/webhooks.h"
#include "t.h"

#include <stdio.h>
#include <string.h>

#define A "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define B "whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
#define C "whsec_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
#define D "whsec_DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD"
#define E "whsec_EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE"

int main(void)
{
    struct webhooks_previous list[WEBHOOKS_PREVIOUS_MAX], back[WEBHOOKS_PREVIOUS_MAX];
    struct arena a;
    int64_t until = 0;
    const char *text;
    size_t n;

    arena_init(&a);
    subtest("two rotations keep both, newest first, each with its own end")
    {
        n = webhooks_previous_push(list, 0, A, 1000);
        n = webhooks_previous_push(list, n, B, 2000);
        is_int(n, 2, "two kept");
        text = webhooks_previous_text(list, n, &until, &a);
        is_str(text, B ":2000 " A ":1000", "the sealed text");
        is_int(until, 2000, "previous_until is the latest end");
        n = webhooks_previous_parse(text, until, 500, back);
        is_int(n, 2, "both sign at 500");
        is_str(back[0].secret, B, "newest first");
        is_int(back[1].until, 1000, "the first keeps its own end");
        n = webhooks_previous_parse(text, until, 1500, back);
        is_int(n, 1, "at 1500 the first has ended");
        is_str(back[0].secret, B, "the second still signs");
        is_int(webhooks_previous_parse(text, until, 2000, back), 0, "at 2000 none");
    }
    subtest("at most WEBHOOKS_PREVIOUS_MAX: the oldest goes")
    {
        n = 0;
        n = webhooks_previous_push(list, n, A, 10);
        n = webhooks_previous_push(list, n, B, 20);
        n = webhooks_previous_push(list, n, C, 30);
        n = webhooks_previous_push(list, n, D, 40);
        n = webhooks_previous_push(list, n, E, 50);
        is_int(n, WEBHOOKS_PREVIOUS_MAX, "four kept");
        is_str(list[0].secret, E, "the newest first");
        is_str(list[3].secret, B, "the oldest kept is the second");
        text = webhooks_previous_text(list, n, &until, &a);
        ok(strlen(text) < WEBHOOKS_PREVIOUS_TEXT, "the text fits its bound");
        is_int(webhooks_previous_parse(text, until, 0, back), 4, "read back whole");
    }
    subtest("the older form and damaged texts")
    {
        n = webhooks_previous_parse(A, 700, 600, back);
        is_int(n, 1, "one bare secret");
        is_int(back[0].until, 700, "signs until previous_until");
        is_int(webhooks_previous_parse(A, 700, 700, back), 0, "and not after");
        is_int(webhooks_previous_parse("", 700, 0, back), 0, "empty");
        is_int(webhooks_previous_parse("nope:900 " A ":x " B ":-5 " C ":900", 0, 0, back), 1,
               "only the well-formed entry");
        is_str(back[0].secret, C, "which is that one");
        is_int(webhooks_previous_parse("whsec_"
                                       "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:900",
                                       0, 0, back),
               0, "a secret too long for its buffer");
        is_int(webhooks_previous_push(list, 0, "", 10), 0, "an empty secret is not kept");
    }
    arena_cleanup(&a);
    return done_testing();
}
