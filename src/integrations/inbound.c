/* SPDX-License-Identifier: MIT */
/*
 * inbound.c: see inbound.h. A signature is checked before anything of the body is believed,
 * and compared in constant time. The names follow the providers' own event names:
 *  - Slack: "slack.<event.type>" of an event_callback; the bot's own messages come back as
 *    events and start nothing (no loops); url_verification is answered with its challenge.
 *  - GitHub: "github.<X-GitHub-Event>[.<action>]"; a ping starts nothing.
 */
#include "inbound.h"

#include "../core/buf.h"
#include "../core/crypto.h"
#include "../core/str.h"

#include <string.h>

/* See inbound.h. False also for a missing 'got' or an empty 'secret'. */
bool integ_signature_ok(const char *got, const char *prefix, const char *secret, const char *msg,
                        size_t len)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    char want[80];
    size_t p = strlen(prefix);

    if (!got || !*secret || p + 2 * CRYPTO_SHA256_LEN >= sizeof(want) ||
        crypto_hmac_sha256(secret, strlen(secret), msg, len, mac))
        return false;
    memcpy(want, prefix, p);
    crypto_hex(mac, sizeof(mac), want + p);
    return strlen(got) == strlen(want) && crypto_equal(got, want, strlen(want));
}

static int bad_signature(struct err *e, const char *why)
{
    return err_set(e, ERR_AUTH, "invalid_signature", NULL, "%s", why);
}

/* The string member 'k' of 'o', or NULL. */
static const char *member(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Whether Slack's event 'event' is the bot's own message. */
static bool slack_own(const json_t *event)
{
    const char *subtype = member(event, "subtype");
    return json_object_get(event, "bot_id") || (subtype && strcmp(subtype, "bot_message") == 0);
}

/* Slack: v0 = HMAC-SHA256 of "v0:<timestamp>:<body>" with the signing secret, the timestamp
 * within INTEG_SLACK_TOLERANCE_S of ours. */
static int slack_event(const char *secret, const struct integ_inbound *in, struct arena *a,
                       struct integ_event *out, struct err *e)
{
    const char *ts = in->header(in->header_ud, "X-Slack-Request-Timestamp");
    const char *sig = in->header(in->header_ud, "X-Slack-Signature");
    const char *type = member(in->payload, "type");
    const json_t *event = json_object_get(in->payload, "event");
    int64_t t = 0, now = in->now_ms / 1000;
    struct buf base;
    bool ok;

    if (!ts || str_to_i64(str_c(ts), &t) || t < now - INTEG_SLACK_TOLERANCE_S ||
        t > now + INTEG_SLACK_TOLERANCE_S)
        return bad_signature(e, "X-Slack-Request-Timestamp is missing or more than 5 minutes "
                                "away: a replay, or a clock out of step.");
    buf_init(&base, in->len + 64);
    buf_appendf(&base, "v0:%s:", ts);
    buf_append(&base, in->body, in->len);
    ok = integ_signature_ok(sig, "v0=", secret, buf_ptr(&base), buf_len(&base));
    buf_cleanup(&base);
    if (!ok)
        return bad_signature(e, "X-Slack-Signature does not match the body.");
    if (type && strcmp(type, "url_verification") == 0) {
        const char *challenge = member(in->payload, "challenge");
        out->answer = json_pack("{ss}", "challenge", challenge ? challenge : "");
        return 0;
    }
    if (!type || strcmp(type, "event_callback") != 0 || !json_is_object(event) ||
        !member(event, "type") || slack_own(event))
        return 0; /* verified, but nothing a workflow listens to */
    out->name = arena_printf(a, "slack.%.100s", member(event, "type"));
    out->id = member(in->payload, "event_id");
    return 0;
}

/* GitHub: X-Hub-Signature-256 = "sha256=" + HMAC-SHA256 of the body with the webhook secret. */
static int github_event(const char *secret, const struct integ_inbound *in, struct arena *a,
                        struct integ_event *out, struct err *e)
{
    const char *sig = in->header(in->header_ud, "X-Hub-Signature-256");
    const char *kind = in->header(in->header_ud, "X-GitHub-Event");
    const char *action = member(in->payload, "action");

    if (!integ_signature_ok(sig, "sha256=", secret, in->body, in->len))
        return bad_signature(e, "X-Hub-Signature-256 is missing or does not match the body.");
    if (!kind || !*kind || strcmp(kind, "ping") == 0)
        return 0;
    if (action && *action)
        out->name = arena_printf(a, "github.%.60s.%.60s", kind, action);
    else
        out->name = arena_printf(a, "github.%.60s", kind);
    out->id = in->header(in->header_ud, "X-GitHub-Delivery");
    return 0;
}

/*
 * See inbound.h. 0 with '*out' (strings in 'a' or borrowed from 'in'), or: ERR_INVALID
 * integration_not_configured "provider" (no WORKFORCE_OAUTH_<P>_SIGNING_SECRET), ERR_AUTH
 * invalid_signature (missing, wrong or stale), ERR_NOT_FOUND (no events from 'p').
 */
int integ_event_verify(const struct config *c, const struct integ_provider *p,
                       const struct integ_inbound *in, struct arena *a, struct integ_event *out,
                       struct err *e)
{
    const char *secret = integ_setting(c, p, CONFIG_OAUTH_SIGNING_SECRET);

    memset(out, 0, sizeof(*out));
    if (p->events == INTEG_EVENTS_NONE)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "%s sends no events.", p->name);
    if (!*secret)
        return err_set(e, ERR_INVALID, "integration_not_configured", "provider",
                       "Events from %s cannot be verified: the operator sets "
                       "WORKFORCE_OAUTH_%s_SIGNING_SECRET.",
                       p->name, config_oauth_provider_names[p->config_index]);
    return p->events == INTEG_EVENTS_SLACK ? slack_event(secret, in, a, out, e)
                                           : github_event(secret, in, a, out, e);
}

/*
 * See inbound.h. A named event with a delivery id is noted for the tenant first: one seen
 * before is 'duplicate' (a provider's retry). The errors of integ_event_verify(), or the
 * store's code.
 */
int integ_event_receive(const struct config *c, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const struct integ_inbound *in,
                        struct arena *a, struct integ_event *out, struct err *e)
{
    bool first = true;
    int rc = integ_event_verify(c, p, in, a, out, e);

    if (rc || !out->name || !out->id || !*out->id)
        return rc;
    rc = store_delivery_note(s, t, p->id, out->id, in->now_ms, &first);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "delivery note failed");
    out->duplicate = !first;
    return 0;
}
