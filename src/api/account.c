/* SPDX-License-Identifier: MIT */
/*
 * account.c: GET /v1/account (contract §3): the organization, its balance, the calling key
 * (id, mode, last 4 characters, scopes; never the secret) or the signed-in user (a session:
 * `key` null), and the limits that apply to it.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/config.h"

#include <string.h>

/* GET /v1/account */
int api_account_get(struct router_req *r, struct err *e)
{
    json_t *o = jo_object(), *key = jo_object(), *scopes = json_array(), *limits = jo_object();
    const char *s = r->key.scopes;
    (void)e;

    jo_str(o, "id", r->org.id);
    jo_str(o, "name", r->org.slug);
    jo_str(o, "tier", config_tier_name((enum config_tier)r->org.tier));
    jo_int(o, "credits_remaining",
           r->tenant.mode == STORE_TEST ? r->org.test_credits : r->org.credits);
    jo_str(key, "id", r->key.id);
    jo_str(key, "mode", r->key.mode == STORE_TEST ? "test" : "live");
    jo_str(key, "last4", r->key.last4);
    while (*s) {
        size_t n = strcspn(s, ",");
        json_array_append_new(scopes, json_stringn(s, n));
        s += n;
        if (*s)
            s++;
    }
    jo_set(key, "scopes", scopes);
    if (r->by_session) {
        /* a person's session (contract §20): no key; the signed-in user */
        struct buf b;
        struct jw w;
        json_decref(key);
        jo_null(o, "key");
        buf_init(&b, 16 * 1024);
        jw_init(&w, &b);
        api_user_write(&w, &r->user);
        jo_set(o, "user", jw_finish(&w) ? json_null() : jo_parse_or_null(buf_ptr(&b)));
        buf_cleanup(&b);
    } else {
        jo_set(o, "key", key);
        jo_null(o, "user");
    }
    jo_int(limits, "requests_per_minute", r->limits.per_minute);
    jo_int(limits, "burst", r->limits.burst);
    jo_int(limits, "concurrent", r->limits.concurrent);
    jo_set(o, "rate_limits", limits);
    router_respond(r, o);
    return 0;
}
