/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ledger/: the credit rules every door applies (contract §3): the price of an
 * engine call, the credit a live piece of work holds, the tier gate (403) and the balance gate
 * (402), and the `error` text of a run or step they refused.
 */
#include "../../src/core/crypto.h"
#include "../../src/ledger/ledger.h"
#include "t.h"

#include <stdio.h>
#include <string.h>

/* "t=<t>,v1=<hex of HMAC-SHA256(secret, "<t>.<body>")>" into 'out'. */
static const char *sign(const char *secret, long long t, const char *body, char *out, size_t n)
{
    char msg[4096];
    unsigned char mac[32];
    int len = snprintf(msg, sizeof(msg), "%lld.%s", t, body);
    size_t at;
    crypto_hmac_sha256(secret, strlen(secret), msg, (size_t)len, mac);
    at = (size_t)snprintf(out, n, "t=%lld,v1=", t);
    for (size_t i = 0; i < 32 && at + 2 < n; i++)
        at += (size_t)snprintf(out + at, n - at, "%02x", mac[i]);
    return out;
}

static void test_stripe_verify(void)
{
    subtest("Stripe-Signature")
    {
        const char *body = "{\"id\":\"evt_1\"}";
        const char *secrets[] = {"whsec_old", "whsec_new"};
        const long long now = 1765000000;
        char h[512], two[1024], sig_new[512];
        struct err e;

        err_clear(&e);
        is_int(ledger_stripe_verify(sign("whsec_new", now, body, h, sizeof(h)), body, strlen(body),
                                    secrets, 2, now, 300, &e),
               0, "signed with the second configured secret");
        is_int(ledger_stripe_verify(sign("whsec_old", now - 300, body, h, sizeof(h)), body,
                                    strlen(body), secrets, 2, now, 300, &e),
               0, "300 s old: within the tolerance");
        is_int(ledger_stripe_verify(sign("whsec_old", now - 301, body, h, sizeof(h)), body,
                                    strlen(body), secrets, 2, now, 300, &e),
               ERR_AUTH, "301 s old: refused");
        is_str(e.code, "invalid_signature", "401 invalid_signature");
        is_int(ledger_stripe_verify(sign("whsec_other", now, body, h, sizeof(h)), body,
                                    strlen(body), secrets, 2, now, 300, &e),
               ERR_AUTH, "another secret: refused");
        is_int(ledger_stripe_verify(sign("whsec_new", now, body, h, sizeof(h)), "{}", 2, secrets, 2,
                                    now, 300, &e),
               ERR_AUTH, "another body: refused");
        is_int(ledger_stripe_verify(sign("whsec_new", now, body, h, sizeof(h)), body, strlen(body),
                                    secrets, 1, now, 300, &e),
               ERR_AUTH, "a secret no longer configured: refused");
        /* during Stripe's own rotation an event carries two v1 signatures */
        sign("whsec_new", now, body, sig_new, sizeof(sig_new));
        snprintf(two, sizeof(two), "%s,v1=%s,v0=abc", sign("whsec_x", now, body, h, sizeof(h)),
                 strstr(sig_new, "v1=") + 3);
        is_int(ledger_stripe_verify(two, body, strlen(body), secrets, 2, now, 300, &e), 0,
               "any v1 matching any secret");
        is_int(ledger_stripe_verify(NULL, body, strlen(body), secrets, 2, now, 300, &e), ERR_AUTH,
               "no header");
        is_int(ledger_stripe_verify("v1=00", body, strlen(body), secrets, 2, now, 300, &e),
               ERR_AUTH, "no timestamp");
        is_int(ledger_stripe_verify("t=1765000000", body, strlen(body), secrets, 2, now, 300, &e),
               ERR_AUTH, "no v1");
        is_int(ledger_stripe_verify("t=1,t=2,v1=00", body, strlen(body), secrets, 2, now, 300, &e),
               ERR_AUTH, "two timestamps");
        is_int(ledger_stripe_verify(sign("whsec_new", now, body, h, sizeof(h)), body, strlen(body),
                                    secrets, 0, now, 300, &e),
               ERR_AUTH, "no secret configured: nothing is accepted");
    }
}

static void test_stripe_parse(void)
{
    subtest("Stripe events")
    {
        struct store_stripe_event ev;
        struct arena a;
        struct err e;
        const char *paid = "{\"id\":\"evt_1\",\"type\":\"checkout.session.completed\","
                           "\"livemode\":false,\"data\":{\"object\":{\"id\":\"cs_test_1\","
                           "\"payment_status\":\"paid\",\"payment_intent\":\"pi_1\","
                           "\"client_reference_id\":\"org_1\"}}}";
        const char *unpaid = "{\"id\":\"evt_2\",\"type\":\"checkout.session.completed\","
                             "\"livemode\":true,\"data\":{\"object\":{\"id\":\"cs_1\","
                             "\"payment_status\":\"unpaid\"}}}";
        const char *refund = "{\"id\":\"evt_3\",\"type\":\"charge.refunded\",\"livemode\":"
                             "true,\"data\":{\"object\":{\"id\":\"ch_1\",\"payment_intent\":"
                             "\"pi_1\",\"amount\":1000,\"amount_refunded\":250}}}";
        const char *dispute = "{\"id\":\"evt_4\",\"type\":\"charge.dispute.created\","
                              "\"livemode\":true,\"data\":{\"object\":{\"id\":\"dp_1\","
                              "\"payment_intent\":\"pi_1\",\"amount\":1000}}}";
        const char *bad[] = {
            "[]",
            "{}",
            "not json",
            "{\"id\":\"evt_5\",\"type\":\"charge.refunded\",\"livemode\":true,\"data\":"
            "{\"object\":{\"id\":\"ch_1\",\"amount\":100,\"amount_refunded\":101}}}",
            "{\"id\":\"evt_6\",\"type\":\"charge.refunded\",\"livemode\":true,\"data\":"
            "{\"object\":{\"id\":\"ch_1\",\"amount\":0,\"amount_refunded\":0}}}",
            "{\"id\":\"evt_7\",\"type\":\"checkout.session.completed\",\"livemode\":"
            "\"yes\",\"data\":{\"object\":{}}}",
            "{\"id\":\"evt_8\",\"type\":\"checkout.session.completed\",\"livemode\":true,"
            "\"data\":{\"object\":{\"payment_status\":\"paid\"}}}"};

        arena_init(&a);
        err_clear(&e);
        is_int(ledger_stripe_parse(paid, strlen(paid), &a, &ev, &e), 0, "a paid session");
        ok(ev.kind == STORE_STRIPE_PAID && !ev.livemode, "paid, test mode");
        is_str(ev.object_id, "cs_test_1", "its session");
        is_str(ev.org_id, "org_1", "its organization");
        is_str(ev.payment_intent, "pi_1", "its payment");
        is_int(ledger_stripe_parse(unpaid, strlen(unpaid), &a, &ev, &e), 0, "an unpaid one");
        ok(ev.kind == STORE_STRIPE_UNPAID && ev.livemode && !ev.payment_intent, "not paid yet");
        is_int(ledger_stripe_parse(refund, strlen(refund), &a, &ev, &e), 0, "a refund");
        ok(ev.kind == STORE_STRIPE_REFUND && ev.amount == 1000 && ev.amount_refunded == 250,
           "its amounts");
        is_int(ledger_stripe_parse(dispute, strlen(dispute), &a, &ev, &e), 0, "a dispute");
        ok(ev.kind == STORE_STRIPE_DISPUTE && ev.amount_refunded == 1000, "all of it");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            is_int(ledger_stripe_parse(bad[i], strlen(bad[i]), &a, &ev, &e), ERR_INVALID,
                   "not an event we apply: 400");
        arena_cleanup(&a);
    }
    subtest("packs")
    {
        const struct config_pack packs[] = {{"price_A", 1000}, {"price_B", 5000}};
        ok(ledger_pack_find(packs, 2, "price_B") == &packs[1], "found by price");
        ok(!ledger_pack_find(packs, 2, "price_C") && !ledger_pack_find(packs, 2, NULL),
           "an unknown price is no pack");
    }
}

static struct store_employee emp(const char *tier)
{
    struct store_employee x;
    memset(&x, 0, sizeof(x));
    x.name = "Dana";
    x.tier = tier;
    return x;
}

static struct store_org org(int tier, int64_t credits)
{
    struct store_org o;
    memset(&o, 0, sizeof(o));
    o.tier = tier;
    o.credits = credits;
    return o;
}

int main(void)
{
    subtest("price")
    {
        struct llm_usage u = {0, 0};
        is_int(ledger_price(&u, STORE_LIVE), 1, "an empty call costs 1");
        u.input_tokens = 600;
        u.output_tokens = 400;
        is_int(ledger_price(&u, STORE_LIVE), 1, "1,000 tokens cost 1");
        u.output_tokens = 401;
        is_int(ledger_price(&u, STORE_LIVE), 2, "1,001 tokens cost 2");
        u.input_tokens = 1000000;
        u.output_tokens = 0;
        is_int(ledger_price(&u, STORE_LIVE), 1000, "a million tokens cost 1,000");
        is_int(ledger_price(&u, STORE_TEST), 0, "test keys are free");
    }
    subtest("hold")
    {
        is_int(ledger_hold(STORE_LIVE), 1, "a live piece of work holds 1 credit");
        is_int(ledger_hold(STORE_TEST), 0, "a test one holds nothing");
    }
    subtest("tier gate")
    {
        struct store_employee m = emp("manager"), s = emp("starter");
        struct err e;
        err_clear(&e);
        is_int(ledger_tier_check(TIER_STARTER, &s, "employee_id", "chat with", &e), 0,
               "a starter employee for a starter organization");
        is_int(ledger_tier_check(TIER_MANAGER, &m, "employee_id", "chat with", &e), 0,
               "a manager employee for a manager organization");
        is_int(ledger_tier_check(TIER_AGENCY, &m, "employee_id", "chat with", &e), 0,
               "and for an agency one");
        is_int(ledger_tier_check(TIER_STARTER, &m, "model", "chat with", &e), ERR_FORBIDDEN,
               "a manager employee for a starter organization: refused");
        is_str(e.code, "permission_denied", "403 permission_denied");
        is_str(e.param, "model", "naming the member given");
        ok(strstr(e.msg, "Dana") && strstr(e.msg, "chat with"), "the message names who and what");
    }
    subtest("gate")
    {
        struct store_employee m = emp("manager"), s = emp("starter");
        struct store_org broke = org(TIER_STARTER, 0), rich = org(TIER_STARTER, 5);
        struct err e;
        char why[512];

        err_clear(&e);
        is_int(ledger_gate(&rich, STORE_LIVE, &s, "employ", NULL, true, &e), 0,
               "a live piece of work with credits starts");
        is_int(ledger_gate(&broke, STORE_TEST, &s, "employ", NULL, true, &e), 0,
               "a test one needs none");
        is_int(ledger_gate(&broke, STORE_LIVE, &s, "employ", NULL, false, &e), 0,
               "nor one that costs nothing");
        is_int(ledger_gate(&broke, STORE_LIVE, NULL, NULL, NULL, true, &e), ERR_LIMIT,
               "a live one that costs, without credits: refused");
        is_str(e.code, "insufficient_credits", "402 insufficient_credits");
        is_str(ledger_refusal(&e, why, sizeof(why)), ledger_no_credits_error,
               "a run's error says it as the queue does");
        err_clear(&e);
        is_int(ledger_gate(&broke, STORE_LIVE, &m, "employ", "steps[0].employee_id", true, &e),
               ERR_FORBIDDEN, "the tier gate comes first");
        is_str(e.param, "steps[0].employee_id", "naming the member");
        ok(strncmp(ledger_refusal(&e, why, sizeof(why)), "permission_denied: ", 19) == 0,
           "a run's error starts with the code");
    }
    test_stripe_verify();
    test_stripe_parse();
    return done_testing();
}
