/* SPDX-License-Identifier: MIT */
/*
 * secrets.c: the signing secrets an endpoint keeps after a rotation. rotate_secret gives an
 * endpoint a new secret and keeps the one it replaces signing for 24 hours, so that receivers
 * have a day to take the new one; a second rotation within that day must not cut the first
 * one's day short (it did: one previous secret was kept, the last). So an endpoint keeps a
 * short list: each secret it had, with the moment it stops signing, newest first, at most
 * WEBHOOKS_PREVIOUS_MAX (a fifth rotation within a day retires the oldest at once: a delivery
 * carries at most five signatures).
 *
 * The list is one text, sealed as the endpoint's previous_secret (the store keeps one blob and
 * the latest end as previous_until): "whsec_A:1767225600000 whsec_B:1767139200000". The text an
 * older version sealed is one secret alone, which signs until previous_until. Pure functions.
 */
#include "webhooks.h"

#include "../core/str.h"

#include <stdio.h>
#include <string.h>

/* See webhooks.h. */
size_t webhooks_previous_parse(const char *text, int64_t until, int64_t now,
                               struct webhooks_previous out[WEBHOOKS_PREVIOUS_MAX])
{
    size_t n = 0;
    const char *p = text;

    while (p && *p && n < WEBHOOKS_PREVIOUS_MAX) {
        size_t len = strcspn(p, " "), slen = strcspn(p, ": ");
        uint64_t end = (uint64_t)until;
        bool ok = slen > 0 && slen < sizeof(out[n].secret) && strncmp(p, "whsec_", 6) == 0;

        if (ok && slen < len) /* "secret:until"; a bare secret is the older form */
            ok = str_to_u64((struct str){p + slen + 1, len - slen - 1}, &end) == 0;
        if (ok && end <= (uint64_t)INT64_MAX && (int64_t)end > now) {
            memcpy(out[n].secret, p, slen);
            out[n].secret[slen] = '\0';
            out[n].until = (int64_t)end;
            n++;
        }
        p += len;
        p += strspn(p, " ");
    }
    return n;
}

/* See webhooks.h. */
size_t webhooks_previous_push(struct webhooks_previous list[WEBHOOKS_PREVIOUS_MAX], size_t n,
                              const char *secret, int64_t until)
{
    size_t len = strlen(secret);

    if (len == 0 || len >= sizeof(list[0].secret))
        return n;
    if (n == WEBHOOKS_PREVIOUS_MAX)
        n--; /* the oldest goes */
    memmove(list + 1, list, n * sizeof(list[0]));
    memcpy(list[0].secret, secret, len + 1);
    list[0].until = until;
    return n + 1;
}

/* See webhooks.h. */
char *webhooks_previous_text(const struct webhooks_previous *list, size_t n, int64_t *until,
                             struct arena *a)
{
    char *text = arena_alloc(a, WEBHOOKS_PREVIOUS_TEXT);
    size_t used = 0;

    *until = 0;
    text[0] = '\0';
    for (size_t i = 0; i < n && i < WEBHOOKS_PREVIOUS_MAX; i++) {
        int w = snprintf(text + used, WEBHOOKS_PREVIOUS_TEXT - used, "%s%s:%lld", i ? " " : "",
                         list[i].secret, (long long)list[i].until);
        if (w < 0 || (size_t)w >= WEBHOOKS_PREVIOUS_TEXT - used)
            break;
        used += (size_t)w;
        if (list[i].until > *until)
            *until = list[i].until;
    }
    return text;
}
