/* SPDX-License-Identifier: MIT */
/*
 * ledger: the credit rules of every door (contract §3). A piece of an employee's work (a chat
 * reply, whichever door it came through; a task run; a workflow step; a workflow run being
 * queued by hand, by a hook, by an integration event or by its schedule) asks here whether it
 * may start (the subscription tier gate, 403, and the balance gate, 402), what it holds when it
 * starts, and what it costs when it ends. The store applies the changes these rules decide:
 * every change of a balance is one call of its credits_apply() (store/ledger.c), inside the
 * transaction of the change it pays for, and the employee's busy mark moves in the same one.
 *
 * The rules, once:
 * - Test keys are free: they hold nothing and cost nothing.
 * - A live piece of work needs a balance of at least 1 to start (402 insufficient_credits,
 *   before any work is done); a chat reply and a task run hold 1 credit from their start.
 * - It costs max(1, ceil(tokens / 1000)) per engine call; the rest beyond what it held is taken
 *   when it ends, never below 0; a piece of work that fails costs nothing (what it held goes
 *   back).
 * - A manager-tier employee works only for a manager or agency organization (403
 *   permission_denied); everyone may list and read every employee.
 */
#ifndef WORKFORCE_LEDGER_H
#define WORKFORCE_LEDGER_H

#include "../core/config.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../json/json.h"
#include "../llm/llm.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Credits a live piece of work holds from its start (a chat reply, a task run). */
#define LEDGER_HOLD 1

/* The `error` of a run or step the balance gate refused: ledger_refusal() of the 402. */
extern const char ledger_no_credits_error[];

/* Credits one engine call of usage 'u' costs a key of 'mode' (0 for test keys). */
int64_t ledger_price(const struct llm_usage *u, enum store_mode mode);

/* Credits a piece of work of a key of 'mode' holds when it starts (LEDGER_HOLD or 0). */
int64_t ledger_hold(enum store_mode mode);

/* 0 when an organization of tier 'org_tier' may employ 'emp' for 'doing' ("chat with"); else
 * 403 permission_denied naming 'param' (NULL: none). */
int ledger_tier_check(int org_tier, const struct store_employee *emp, const char *param,
                      const char *doing, struct err *e);

/* Set 'e' to 402 insufficient_credits; returns ERR_LIMIT. */
int ledger_insufficient(struct err *e);

/*
 * The gate before a piece of work of a key of 'mode' for 'org' starts: the tier gate for 'emp'
 * when it is not NULL (doing 'doing', naming 'param'), then, when 'costs' (it may call an
 * engine), the balance gate for a live key. 0, or 403 / 402 in 'e'.
 */
int ledger_gate(const struct store_org *org, enum store_mode mode, const struct store_employee *emp,
                const char *doing, const char *param, bool costs, struct err *e);

/* The `error` of a run or step that a gate refused with 'e': "<code>: <message>" in 'out' (of
 * 'n' bytes), which is returned. */
const char *ledger_refusal(const struct err *e, char *out, size_t n);

/* ---- Credits that are bought (contract §21) ---- */

/* Seconds a Stripe-Signature timestamp may be off from now. */
#define LEDGER_STRIPE_TOLERANCE 300

/* 0 when header 'header' (Stripe-Signature) signs 'body' ('len' bytes) with one of the
 * 'nsecrets' endpoint secrets, at a time within 'tolerance_s' of 'now_s'; else 401
 * invalid_signature in 'e'. */
int ledger_stripe_verify(const char *header, const char *body, size_t len,
                         const char *const secrets[], size_t nsecrets, int64_t now_s,
                         int64_t tolerance_s, struct err *e);
/* What a verified Stripe event says that the store applies ('out''s strings in 'a'); 400
 * invalid_request in 'e' when it is not an event. */
int ledger_stripe_parse(const char *body, size_t len, struct arena *a,
                        struct store_stripe_event *out, struct err *e);
/* The pack of price 'price_id' among 'packs', or NULL. */
const struct config_pack *ledger_pack_find(const struct config_pack *packs, size_t n,
                                           const char *price_id);
/* A ledger entry as the API and the events show it. */
void ledger_tx_write(struct jw *w, const struct store_credit_tx *x);

#endif
