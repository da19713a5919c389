/* SPDX-License-Identifier: MIT */
/*
 * inbound.c: see inbound.h. A signature is checked before anything of the body is believed,
 * and compared in constant time. The names follow the providers' own event names:
 *  - Slack: "slack.<event.type>" of an event_callback; the bot's own messages come back as
 *    events and start nothing (no loops); url_verification is answered with its challenge.
 *  - GitHub: "github.<X-GitHub-Event>[.<action>]"; a ping starts nothing.
 * A delivery is the provider's id (Slack's event_id, GitHub's X-GitHub-Delivery); an event
 * without one (a forwarder that drops the header, a Slack payload without event_id, Slack's
 * retries of it: X-Slack-Retry-Num) is known by the SHA-256 of its name and body for a day.
 */
#include "inbound.h"

#include "oauth.h"

#include "../core/buf.h"
#include "../core/crypto.h"
#include "../core/id.h"
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

/* ---- Signatures ---- */

/* Slack: v0 = HMAC-SHA256 of "v0:<timestamp>:<body>" with the signing secret, the timestamp
 * within INTEG_SLACK_TOLERANCE_S of ours. */
static int slack_signed(const char *secret, const struct integ_inbound *in, struct err *e)
{
    const char *ts = in->header(in->header_ud, "X-Slack-Request-Timestamp");
    const char *sig = in->header(in->header_ud, "X-Slack-Signature");
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
    return ok ? 0 : bad_signature(e, "X-Slack-Signature does not match the body.");
}

/* GitHub: X-Hub-Signature-256 = "sha256=" + HMAC-SHA256 of the body with the webhook secret. */
static int github_signed(const char *secret, const struct integ_inbound *in, struct err *e)
{
    const char *sig = in->header(in->header_ud, "X-Hub-Signature-256");
    if (!integ_signature_ok(sig, "sha256=", secret, in->body, in->len))
        return bad_signature(e, "X-Hub-Signature-256 is missing or does not match the body.");
    return 0;
}

/* Check the signature of 'in' from 'p' with 'secret' ("": none is configured). */
static int check(const struct integ_provider *p, const char *secret, const struct integ_inbound *in,
                 struct err *e)
{
    if (p->events == INTEG_EVENTS_NONE)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "%s sends no events.", p->name);
    if (!*secret)
        return err_set(e, ERR_INVALID, "integration_not_configured", "provider",
                       "Events from %s cannot be verified: the operator sets "
                       "WORKFORCE_OAUTH_%s_SIGNING_SECRET%s.",
                       p->name, config_oauth_provider_names[p->config_index],
                       p->own_secret ? ", or the organization sets its own with POST "
                                       "/v1/integrations/<provider>/events/secret"
                                     : "");
    return p->events == INTEG_EVENTS_SLACK ? slack_signed(secret, in, e)
                                           : github_signed(secret, in, e);
}

/* ---- Names ---- */

/* Whether Slack's event 'event' is the bot's own message. */
static bool slack_own(const json_t *event)
{
    const char *subtype = member(event, "subtype");
    return json_object_get(event, "bot_id") || (subtype && strcmp(subtype, "bot_message") == 0);
}

static void slack_name(const struct integ_inbound *in, struct arena *a, struct integ_event *out)
{
    const char *type = member(in->payload, "type");
    const json_t *event = json_object_get(in->payload, "event");

    if (type && strcmp(type, "url_verification") == 0) {
        const char *challenge = member(in->payload, "challenge");
        out->answer = json_pack("{ss}", "challenge", challenge ? challenge : "");
        return;
    }
    if (!type || strcmp(type, "event_callback") != 0 || !json_is_object(event) ||
        !member(event, "type") || slack_own(event))
        return; /* verified, but nothing a workflow listens to */
    out->name = arena_printf(a, "slack.%.100s", member(event, "type"));
    out->id = member(in->payload, "event_id");
}

static void github_name(const struct integ_inbound *in, struct arena *a, struct integ_event *out)
{
    const char *kind = in->header(in->header_ud, "X-GitHub-Event");
    const char *action = member(in->payload, "action");

    if (!kind || !*kind || strcmp(kind, "ping") == 0)
        return;
    if (action && *action)
        out->name = arena_printf(a, "github.%.60s.%.60s", kind, action);
    else
        out->name = arena_printf(a, "github.%.60s", kind);
    out->id = in->header(in->header_ud, "X-GitHub-Delivery");
}

/* See inbound.h. A named event the provider gave no id is known by its name and body. */
void integ_event_name(const struct integ_provider *p, const struct integ_inbound *in,
                      struct arena *a, struct integ_event *out)
{
    memset(out, 0, sizeof(*out));
    if (p->events == INTEG_EVENTS_SLACK)
        slack_name(in, a, out);
    else if (p->events == INTEG_EVENTS_GITHUB)
        github_name(in, a, out);
    if (out->name && (!out->id || !*out->id)) {
        unsigned char h[CRYPTO_SHA256_LEN];
        char hex[2 * CRYPTO_SHA256_LEN + 1];
        struct crypto_sha256 *sha = crypto_sha256_new();
        if (!sha)
            return; /* OOM: xmalloc's family aborts first; no id, no dedup */
        crypto_sha256_update(sha, out->name, strlen(out->name) + 1); /* with its NUL */
        crypto_sha256_update(sha, in->body, in->len);
        crypto_sha256_final(sha, h);
        crypto_sha256_free(sha);
        crypto_hex(h, sizeof(h), hex);
        out->id = arena_printf(a, "body:%s", hex);
        out->by_body = true;
    }
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
    int rc = check(p, integ_setting(c, p, CONFIG_OAUTH_SIGNING_SECRET), in, e);

    memset(out, 0, sizeof(*out));
    if (rc)
        return rc;
    integ_event_name(p, in, a, out);
    return 0;
}

/* The organization's own signing secret of 'p' for 't' (opened into 'a'), or "" for none. */
static int own_secret(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                      const struct integ_provider *p, struct arena *a, const char **out,
                      struct err *e)
{
    struct store_inbound row;
    int rc;

    *out = "";
    if (!t || !p->own_secret)
        return 0;
    rc = store_inbound_get(s, t, p->id, NULL, a, &row);
    if (rc == ERR_NOT_FOUND || (!rc && !row.secret))
        return 0; /* none of its own */
    if (rc)
        return err_set(e, ERR_STORE, "internal_error", NULL, "the events secret could not be read");
    *out = integ_open(env->key, t, p->id, "signing_secret", row.secret, row.secret_len, a);
    if (!*out || !**out)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL,
                       "the organization's signing secret does not open (another server secret?)");
    return 0;
}

/*
 * See inbound.h. Only the raw body and the headers are read ('in->payload' may be NULL). The
 * organization's own secret, when it set one, replaces the server's: the server's is known to
 * every organization that set up its provider with it. The errors of integ_event_verify(), and
 * ERR_STORE or ERR_INTERNAL when the organization's secret cannot be read.
 */
int integ_event_authenticate(const struct integ_env *env, struct store *s,
                             const struct store_tenant *t, const struct integ_provider *p,
                             const struct integ_inbound *in, struct arena *a, struct err *e)
{
    const char *secret = "";
    int rc = own_secret(env, s, t, p, a, &secret, e);

    if (rc)
        return rc;
    if (!*secret)
        secret = integ_setting(env->cfg, p, CONFIG_OAUTH_SIGNING_SECRET);
    return check(p, secret, in, e);
}

/*
 * See inbound.h. The provider's id is remembered a week (STORE_DELIVERY_KEEP_MS); a body's
 * for INTEG_BODY_WINDOW_MS, after which the same body is a new event (GitHub sends the same
 * push twice only when asked to). An event without a name is not noted. The store's code.
 */
int integ_event_note(struct store *s, const struct store_tenant *t, const struct integ_provider *p,
                     const struct integ_inbound *in, struct integ_event *ev, struct err *e)
{
    bool first = true;
    int rc;

    ev->duplicate = false;
    if (!ev->name || !ev->id || !*ev->id)
        return 0;
    rc = store_delivery_note(s, t, p->id, ev->id, in->now_ms,
                             ev->by_body ? INTEG_BODY_WINDOW_MS : STORE_DELIVERY_KEEP_MS, &first);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "delivery note failed");
    ev->duplicate = !first;
    return 0;
}

/* See inbound.h. The errors of both. */
int integ_event_receive(const struct config *c, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const struct integ_inbound *in,
                        struct arena *a, struct integ_event *out, struct err *e)
{
    int rc = integ_event_verify(c, p, in, a, out, e);
    return rc ? rc : integ_event_note(s, t, p, in, out, e);
}

/* ---- Slack's workspaces ---- */

/* See inbound.h. The key is derived from the sealing key with HKDF, so that neither key serves
 * both purposes; the provider's name is part of what is hashed. */
const char *integ_account_key(const unsigned char key[CRYPTO_SEAL_KEY_LEN],
                              const struct integ_provider *p, const char *id, struct arena *a)
{
    static const char info[] = "integration account keys v1";
    unsigned char k[CRYPTO_SHA256_LEN], mac[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];
    struct buf msg;
    int rc;

    if (!id || !*id ||
        crypto_hkdf_sha256(key, CRYPTO_SEAL_KEY_LEN, "workforce", 9, info, sizeof(info) - 1, k,
                           sizeof(k)))
        return NULL;
    buf_init(&msg, 4096);
    buf_appendf(&msg, "%s/%.1000s", p->id, id);
    rc = crypto_hmac_sha256(k, sizeof(k), buf_ptr(&msg), buf_len(&msg), mac);
    buf_cleanup(&msg);
    explicit_bzero(k, sizeof(k));
    if (rc)
        return NULL;
    crypto_hex(mac, sizeof(mac), hex);
    return arena_strdup(a, hex);
}

/* See inbound.h. Slack names the workspace in 'team_id' (and, for events of shared channels
 * seen from another workspace, 'authorizations[].team_id': the app's own installation). */
int integ_event_tenants(const struct integ_env *env, struct store *s,
                        const struct integ_provider *p, const struct integ_inbound *in,
                        struct store_tenant out[INTEG_TEAM_TENANTS], size_t *n, struct err *e)
{
    const char *team = member(in->payload, "team_id");
    const json_t *auths = json_object_get(in->payload, "authorizations");
    const char *k;
    struct arena a;
    int rc;

    *n = 0;
    if (json_is_array(auths) && member(json_array_get(auths, 0), "team_id"))
        team = member(json_array_get(auths, 0), "team_id");
    if (!team || !*team)
        return 0;
    arena_init(&a);
    k = integ_account_key(env->key, p, team, &a);
    rc = k ? store_integration_tenants(s, p->id, k, out, INTEG_TEAM_TENANTS, n) : ERR_INTERNAL;
    arena_cleanup(&a);
    if (rc)
        return err_set(e, rc == ERR_INTERNAL ? ERR_INTERNAL : ERR_STORE, "internal_error", NULL,
                       "the workspace's connections could not be read");
    return 0;
}

/* ---- The organization's events URL and signing secret ---- */

/* See inbound.h. */
const char *integ_events_url(const struct config *c, const struct integ_provider *p,
                             const char *token, struct arena *a)
{
    const char *base = c->public_url;
    size_t n = strlen(base);
    struct buf b;
    const char *url;
    buf_init(&b, 4096);
    buf_append(&b, base, n > 0 && base[n - 1] == '/' ? n - 1 : n);
    buf_appendf(&b, "/v1/integrations/%s/events/%s", p->id, token);
    url = arena_strdup(a, buf_ptr(&b));
    buf_cleanup(&b);
    return url;
}

/* 'p' sends events the server can verify, or 404 naming it. */
static int has_events(const struct integ_provider *p, struct err *e)
{
    if (p->events != INTEG_EVENTS_NONE)
        return 0;
    return err_set(e, ERR_INVALID, "invalid_request", "provider",
                   "%s sends no events this server can verify: it has no events URL.", p->name);
}

/* The view of the tenant's row 'row' of 'p'. */
static void events_view(const struct integ_env *env, const struct integ_provider *p,
                        const struct store_inbound *row, struct arena *a,
                        struct integ_events_view *out)
{
    memset(out, 0, sizeof(*out));
    out->p = p;
    out->events_url = integ_events_url(env->cfg, p, row->token, a);
    out->secret_set = row->secret != NULL;
    if (out->secret_set)
        out->verified_with = "organization";
    else if (*integ_setting(env->cfg, p, CONFIG_OAUTH_SIGNING_SECRET))
        out->verified_with = "server";
}

/* See inbound.h. ERR_INVALID invalid_request "provider" for a provider without events, ERR_STORE
 * or ERR_INTERNAL. */
int integ_events_get(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                     const struct integ_provider *p, struct arena *a, struct integ_events_view *out,
                     struct err *e)
{
    char fresh[INTEG_STATE_LEN + 1];
    struct store_inbound row;
    int rc = has_events(p, e);

    if (rc)
        return rc;
    if (id_base62(fresh, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (store_inbound_get(s, t, p->id, fresh, a, &row))
        return err_set(e, ERR_STORE, "internal_error", NULL, "the events URL could not be read");
    events_view(env, p, &row, a, out);
    return 0;
}

/* See inbound.h. The same errors as integ_events_get(). */
int integ_events_rotate(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, struct arena *a,
                        struct integ_events_view *out, struct err *e)
{
    char fresh[INTEG_STATE_LEN + 1];
    int rc = has_events(p, e);

    if (rc)
        return rc;
    if (id_base62(fresh, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (store_inbound_rotate(s, t, p->id, fresh))
        return err_set(e, ERR_STORE, "internal_error", NULL, "the events URL could not be rotated");
    return integ_events_get(env, s, t, p, a, out, e);
}

/* A secret of INTEG_SECRET_MIN to INTEG_SECRET_MAX printable ASCII characters. */
static bool secret_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < INTEG_SECRET_MIN || n > INTEG_SECRET_MAX)
        return false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c >= 0x7f)
            return false;
    }
    return true;
}

/* See inbound.h. ERR_INVALID invalid_request "provider" (no events, or the provider signs with
 * the server's app secret only) or "secret" (its length or characters), and the errors of
 * integ_events_get(). The secret is never logged nor answered. */
int integ_events_secret(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const char *secret, struct arena *a,
                        struct integ_events_view *out, struct err *e)
{
    char fresh[INTEG_STATE_LEN + 1];
    const unsigned char *sealed = NULL;
    size_t len = 0;
    int rc = has_events(p, e);

    if (rc)
        return rc;
    if (!p->own_secret)
        return err_set(e, ERR_INVALID, "invalid_request", "provider",
                       "%s signs its events with the secret of the server's app "
                       "(WORKFORCE_OAUTH_%s_SIGNING_SECRET): an organization sets none.",
                       p->name, config_oauth_provider_names[p->config_index]);
    if (secret && !secret_ok(secret))
        return err_set(e, ERR_INVALID, "invalid_request", "secret",
                       "Invalid secret: %d to %d printable ASCII characters.", INTEG_SECRET_MIN,
                       INTEG_SECRET_MAX);
    if (secret) {
        sealed = integ_seal(env->key, t, p->id, "signing_secret", secret, a, &len);
        if (!sealed)
            return err_set(e, ERR_INTERNAL, "internal_error", NULL, "sealing failed");
    }
    if (id_base62(fresh, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (store_inbound_secret(s, t, p->id, fresh, sealed, len))
        return err_set(e, ERR_STORE, "internal_error", NULL, "the secret could not be stored");
    return integ_events_get(env, s, t, p, a, out, e);
}
