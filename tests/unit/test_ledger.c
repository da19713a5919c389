/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ledger/: the credit rules every door applies (contract §3): the price of an
 * engine call, the credit a live piece of work holds, the tier gate (403) and the balance gate
 * (402), and the `error` text of a run or step they refused.
 */
#include "../../src/ledger/ledger.h"
#include "t.h"

#include <string.h>

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
    return done_testing();
}
