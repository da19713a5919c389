/* SPDX-License-Identifier: MIT */
/*
 * webhooks: events and their outbound delivery (contract §15). event.c writes an event and the
 * objects events report; worker.c delivers the outbox to the endpoints, signed by the Standard
 * Webhooks scheme, off the request path.
 */
#ifndef WORKFORCE_WEBHOOKS_H
#define WORKFORCE_WEBHOOKS_H

#include "../core/crypto.h"
#include "../json/json.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The event types, in the contract's order; NULL-terminated. */
/* What an endpoint may subscribe to: "*" (every type), then each event type; NULL-terminated. */
extern const char *const webhooks_event_selectors[];
/* The event types (NULL-terminated). */
#define WEBHOOKS_EVENT_TYPES (webhooks_event_selectors + 1)
/* Whether 'type' ('len' bytes) is one of them. */
bool webhooks_type_known(const char *type, size_t len);

/* The JSON text of an event's object (a store_hook_render_fn: give it to store_hooks_init()). */
const char *webhooks_render(enum store_hook_kind kind, const void *obj, struct arena *a);
/* The event {id, type, created_at, data: {object}} as the API shows and delivers it. */
void webhooks_event_write(struct jw *w, const struct store_hook_event *ev);

/* ---- Delivery (worker.c) ---- */

struct webhooks_worker;

struct webhooks_options {
    unsigned threads;   /* deliveries attempted at once (WORKFORCE_WEBHOOKS_WORKERS) */
    int64_t timeout_ms; /* one attempt, at most (WORKFORCE_WEBHOOKS_TIMEOUT_MS) */
    bool allow_private; /* WORKFORCE_WEBHOOKS_ALLOW_PRIVATE */
};

/* Start the delivery threads over 'pool' (kept by the caller until the stop), opening secrets
 * with 'key' (integ_key()). '*out' is the caller's: webhooks_worker_stop(). 0 or ERR_INTERNAL. */
int webhooks_worker_start(struct store_pool *pool, const unsigned char key[32],
                          const struct webhooks_options *o, struct webhooks_worker **out);
/* Wake the threads: events were recorded ('ud': the worker; NULL is a no-op). Give it to
 * store_hooks_init(). */
void webhooks_worker_wake(void *ud);
/* Stop and free: an attempt under way ends first (at most the timeout). NULL is a no-op. */
void webhooks_worker_stop(struct webhooks_worker *w);
/* When attempt 'attempt' (from 1) that failed at 'now' is tried again; 0: no attempt left. */
int64_t webhooks_retry_at(int64_t attempt, int64_t now);

/* ---- The secrets that still sign after a rotation (secrets.c) ---- */

#define WEBHOOKS_ROTATE_OVERLAP_MS (24 * 3600 * 1000LL) /* a replaced secret signs this long */
#define WEBHOOKS_PREVIOUS_MAX 4 /* replaced secrets kept at once (a fifth retires the oldest) */
#define WEBHOOKS_PREVIOUS_TEXT (WEBHOOKS_PREVIOUS_MAX * (CRYPTO_WHSEC_STR_LEN + 21) + 1)
/* The webhook-signature value: one signature per secret in force, space-separated, NUL. */
#define WEBHOOKS_SIGNATURES_LEN ((WEBHOOKS_PREVIOUS_MAX + 1) * CRYPTO_WHSIG_LEN)

/* A replaced secret and the moment it stops signing (ms since the epoch). */
struct webhooks_previous {
    char secret[CRYPTO_WHSEC_STR_LEN];
    int64_t until;
};
/* The secrets of 'text' (an endpoint's previous_secret, opened; a text of an older version, one
 * secret alone, signs until 'until') still signing at 'now', newest first, into 'out'; their
 * number. Malformed entries are skipped. Pure. */
size_t webhooks_previous_parse(const char *text, int64_t until, int64_t now,
                               struct webhooks_previous out[WEBHOOKS_PREVIOUS_MAX]);
/* Put 'secret' first in 'list' (its 'n' entries), signing until 'until'; with the list full, the
 * oldest goes. The new number. Pure. */
size_t webhooks_previous_push(struct webhooks_previous list[WEBHOOKS_PREVIOUS_MAX], size_t n,
                              const char *secret, int64_t until);
/* The text of the 'n' entries of 'list' (to be sealed), from 'a'; '*until' gets the latest end
 * (the endpoint's previous_until), 0 when the list is empty. */
char *webhooks_previous_text(const struct webhooks_previous *list, size_t n, int64_t *until,
                             struct arena *a);

#endif
