/* SPDX-License-Identifier: MIT */
/*
 * inbound: the events a provider sends to a tenant's events URL (contract §13), and Slack's to
 * the URL of the server's Slack app: the provider's own signature checked (Slack's v0 with its
 * 5-minute tolerance, GitHub's X-Hub-Signature-256) with the organization's own secret where it
 * set one, else the server's; the event named as workflows' integration triggers name it
 * ("slack.message", "github.issues.opened"); Slack's url_verification challenge answered; a
 * delivery seen before told apart, by the provider's delivery id or, without one, by its body;
 * the tenants whose connection holds a Slack event's workspace. Which workflows an event starts
 * is not decided here.
 *
 * DESIGN. A signature is checked on the raw body before anything of it is believed, and before
 * the request counts against the tenant's limits (the router calls the check first, see
 * ROUTE_VERIFY): an unsigned flood costs its target nothing. Naming and noting come after, on
 * the parsed body.
 */
#ifndef WORKFORCE_INTEGRATIONS_INBOUND_H
#define WORKFORCE_INTEGRATIONS_INBOUND_H

#include "operations.h"
#include "providers.h"

#include "../core/config.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INTEG_SLACK_TOLERANCE_S 300 /* Slack's 5 minutes between its timestamp and ours */
/* A delivery without the provider's id is the same delivery when its body is, within this. */
#define INTEG_BODY_WINDOW_MS (24LL * 3600 * 1000)
#define INTEG_SECRET_MIN 16   /* characters of an organization's own signing secret */
#define INTEG_SECRET_MAX 256  /* (GitHub's webhook secret) */
#define INTEG_TEAM_TENANTS 20 /* tenants one Slack workspace's event reaches at most */

/* What the provider sent. */
struct integ_inbound {
    const char *body; /* the raw body, as the provider signed it */
    size_t len;
    const json_t *payload; /* the body parsed (borrowed; NULL: not parsed, or not JSON) */
    /* The value of the request's header 'name', or NULL when absent (called with 'header_ud'). */
    const char *(*header)(void *ud, const char *name);
    void *header_ud;
    int64_t now_ms; /* our clock, against which Slack's timestamp is judged */
};

/* What a verified event is. */
struct integ_event {
    const char *name; /* "slack.message", "github.push"; NULL: it starts nothing */
    /* The delivery's id: the provider's (borrowed from the input), or "body:<hex SHA-256>" of
     * the name and body (from the arena) when the provider sent none; NULL with no name. */
    const char *id;
    bool by_body;   /* 'id' is the body's: a resend is recognised within INTEG_BODY_WINDOW_MS */
    json_t *answer; /* to answer instead (Slack's challenge): the caller owns it; or NULL */
    bool duplicate; /* integ_event_note(): this delivery was seen before */
};

/* Whether 'got' is 'prefix' followed by the hex HMAC-SHA256 of 'msg' under 'secret'. */
bool integ_signature_ok(const char *got, const char *prefix, const char *secret, const char *msg,
                        size_t len);
/* Check the signature of 'in' from 'p' with the server's secret and name its event (no store). */
int integ_event_verify(const struct config *c, const struct integ_provider *p,
                       const struct integ_inbound *in, struct arena *a, struct integ_event *out,
                       struct err *e);
/* Check the signature of the raw 'in' from 'p' for tenant 't' (NULL: the server's Slack app):
 * with the organization's own secret where it set one, else the server's. */
int integ_event_authenticate(const struct integ_env *env, struct store *s,
                             const struct store_tenant *t, const struct integ_provider *p,
                             const struct integ_inbound *in, struct arena *a, struct err *e);
/* Name the event of 'in' (its signature checked, its payload parsed) into '*out'. */
void integ_event_name(const struct integ_provider *p, const struct integ_inbound *in,
                      struct arena *a, struct integ_event *out);
/* Note the named delivery 'ev' of 'p' for tenant 't': 'ev->duplicate' when seen before. */
int integ_event_note(struct store *s, const struct store_tenant *t, const struct integ_provider *p,
                     const struct integ_inbound *in, struct integ_event *ev, struct err *e);
/* integ_event_verify(), then integ_event_note() for tenant 't'. */
int integ_event_receive(const struct config *c, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const struct integ_inbound *in,
                        struct arena *a, struct integ_event *out, struct err *e);
/* The tenants (at most INTEG_TEAM_TENANTS into 'out', '*n') whose connection to Slack holds the
 * workspace of the verified event 'in' (its team_id): none when it names no workspace. */
int integ_event_tenants(const struct integ_env *env, struct store *s,
                        const struct integ_provider *p, const struct integ_inbound *in,
                        struct store_tenant out[INTEG_TEAM_TENANTS], size_t *n, struct err *e);
/* The key by which the connections of 'p' holding the account 'id' (Slack's team id) are found:
 * a hex HMAC-SHA256 under a key derived from 'key', into 'a'; NULL when it cannot be made. */
const char *integ_account_key(const unsigned char key[CRYPTO_SEAL_KEY_LEN],
                              const struct integ_provider *p, const char *id, struct arena *a);

/* ---- The organization's own signing secret and events URL ---- */

/* The tenant's events URL of 'p' with 'token': {public_url}/v1/integrations/{p}/events/<token>
 * (in 'a'). */
const char *integ_events_url(const struct config *c, const struct integ_provider *p,
                             const char *token, struct arena *a);

/* How a tenant receives the events of a provider, as the API shows it. */
struct integ_events_view {
    const struct integ_provider *p;
    const char *events_url; /* the tenant's URL (arena) */
    bool secret_set;        /* the organization set its own signing secret */
    /* Whose secret checks its events: "organization", "server", or NULL (none: refused). */
    const char *verified_with;
};
/* The view of the tenant's events of 'p' (its token made the first time). */
int integ_events_get(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                     const struct integ_provider *p, struct arena *a, struct integ_events_view *out,
                     struct err *e);
/* A new token for the tenant's events URL of 'p' (the old one is unknown at once); '*out' after. */
int integ_events_rotate(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, struct arena *a,
                        struct integ_events_view *out, struct err *e);
/* Set the organization's own signing secret of 'p' ('secret' NULL: forget it, the server's
 * checks again), sealed at rest; '*out' after. */
int integ_events_secret(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const char *secret, struct arena *a,
                        struct integ_events_view *out, struct err *e);

#endif
