/* SPDX-License-Identifier: MIT */
/*
 * inbound: the events a provider sends to a tenant's events URL (contract §13): the provider's
 * own signature checked (Slack's v0 with its 5-minute tolerance, GitHub's X-Hub-Signature-256),
 * the event named as workflows' integration triggers name it ("slack.message",
 * "github.issues.opened"), Slack's url_verification challenge answered, and a delivery seen
 * before told apart. Which workflows an event starts is not decided here.
 */
#ifndef WORKFORCE_INTEGRATIONS_INBOUND_H
#define WORKFORCE_INTEGRATIONS_INBOUND_H

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

/* What the provider sent. */
struct integ_inbound {
    const char *body; /* the raw body, as the provider signed it */
    size_t len;
    const json_t *payload; /* the body parsed (borrowed; NULL: not a JSON document) */
    /* The value of the request's header 'name', or NULL when absent (called with 'header_ud'). */
    const char *(*header)(void *ud, const char *name);
    void *header_ud;
    int64_t now_ms; /* our clock, against which Slack's timestamp is judged */
};

/* What a verified event is. */
struct integ_event {
    const char *name; /* "slack.message", "github.push"; NULL: it starts nothing */
    const char *id;   /* the provider's delivery id (borrowed from the input), or NULL */
    json_t *answer;   /* to answer instead (Slack's challenge): the caller owns it; or NULL */
    bool duplicate;   /* integ_event_receive(): this delivery was seen before */
};

/* Whether 'got' is 'prefix' followed by the hex HMAC-SHA256 of 'msg' under 'secret'. */
bool integ_signature_ok(const char *got, const char *prefix, const char *secret, const char *msg,
                        size_t len);
/* Check the signature of 'in' from 'p' and name its event (no store). */
int integ_event_verify(const struct config *c, const struct integ_provider *p,
                       const struct integ_inbound *in, struct arena *a, struct integ_event *out,
                       struct err *e);
/* integ_event_verify(), then note the delivery for tenant 't' ('out->duplicate'). */
int integ_event_receive(const struct config *c, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const struct integ_inbound *in,
                        struct arena *a, struct integ_event *out, struct err *e);

#endif
