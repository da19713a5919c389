/* SPDX-License-Identifier: MIT */
/*
 * ledger.c: the credit rules (see ledger.h). Pure: the store applies what they decide.
 */
#include "ledger.h"

#include <stdio.h>
#include <string.h>

/* The one wording of the 402. */
#define NO_CREDITS "The organization has no credits left for live calls and runs."

const char ledger_no_credits_error[] = "insufficient_credits: " NO_CREDITS;

/* See ledger.h. */
int64_t ledger_price(const struct llm_usage *u, enum store_mode mode)
{
    int64_t total;
    if (mode != STORE_LIVE)
        return 0;
    total = u->input_tokens + u->output_tokens;
    return total <= 1000 ? 1 : (total + 999) / 1000;
}

/* See ledger.h. */
int64_t ledger_hold(enum store_mode mode)
{
    return mode == STORE_LIVE ? LEDGER_HOLD : 0;
}

/* See ledger.h. */
int ledger_tier_check(int org_tier, const struct store_employee *emp, const char *param,
                      const char *doing, struct err *e)
{
    if (strcmp(emp->tier, "manager") == 0 && org_tier == TIER_STARTER)
        return err_set(e, ERR_FORBIDDEN, "permission_denied", param,
                       "%s is a manager-tier employee; the starter subscription cannot %s "
                       "manager-tier employees.",
                       emp->name, doing);
    return 0;
}

/* See ledger.h. */
int ledger_insufficient(struct err *e)
{
    return err_set(e, ERR_LIMIT, "insufficient_credits", NULL, "%s", NO_CREDITS);
}

/* See ledger.h. */
const char *ledger_refusal(const struct err *e, char *out, size_t n)
{
    snprintf(out, n, "%s: %s", e->code ? e->code : "internal_error", e->msg);
    return out;
}

/* See ledger.h. */
int ledger_gate(const struct store_org *org, enum store_mode mode, const struct store_employee *emp,
                const char *doing, const char *param, bool costs, struct err *e)
{
    int rc = emp ? ledger_tier_check(org->tier, emp, param, doing, e) : 0;
    if (rc)
        return rc;
    if (costs && mode == STORE_LIVE && org->credits < LEDGER_HOLD)
        return ledger_insufficient(e);
    return 0;
}

/* See ledger.h. */
const struct config_pack *ledger_pack_find(const struct config_pack *packs, size_t n,
                                           const char *price_id)
{
    for (size_t i = 0; price_id && i < n; i++)
        if (strcmp(packs[i].price_id, price_id) == 0)
            return &packs[i];
    return NULL;
}

/* See ledger.h. */
void ledger_tx_write(struct jw *w, const struct store_credit_tx *x)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, x->id);
    jw_key(w, "object");
    jw_str(w, "credit_transaction");
    jw_key(w, "amount");
    jw_int(w, x->amount);
    jw_key(w, "balance_after");
    jw_int(w, x->balance_after);
    jw_key(w, "shortfall");
    jw_int(w, x->shortfall);
    jw_key(w, "reason");
    jw_str(w, store_credit_reasons[x->reason]);
    jw_key(w, "reference");
    if (x->ref_type && x->ref_id) {
        jw_obj(w);
        jw_key(w, "type");
        jw_str(w, x->ref_type);
        jw_key(w, "id");
        jw_str(w, x->ref_id);
        jw_obj_end(w);
    } else {
        jw_null(w);
    }
    jw_key(w, "employee_id");
    jw_str(w, x->employee_id && *x->employee_id ? x->employee_id : NULL);
    jw_key(w, "mode");
    jw_str(w, x->tenant.mode == STORE_TEST ? "test" : "live");
    jw_key(w, "created_at");
    jw_time(w, x->created_at);
    jw_obj_end(w);
}
