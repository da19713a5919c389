/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of integrations/inbound.c: the providers' signatures (Slack v0 with its 5-minute
 * tolerance, GitHub's sha256), Slack's url_verification challenge, the names events get, the
 * events that start nothing (the bot's own messages, a ping), and the refusals (no secret,
 * no events from the provider).
 */
#include "../../src/core/config.h"
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/integrations/inbound.h"
#include "../../src/integrations/providers.h"
#include "t.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define NOW_S 1790000000LL
#define SLACK_SECRET "8f742231b10e8888abcd99yyyzzz85a5"
#define GITHUB_SECRET "It's a Secret to Everybody"

static struct config cfg;

/* ---- A request's headers ---- */

struct headers {
    const char *name[4];
    const char *value[4];
};

static const char *header(void *ud, const char *name)
{
    const struct headers *h = ud;
    for (size_t i = 0; i < 4 && h->name[i]; i++)
        if (strcasecmp(h->name[i], name) == 0)
            return h->value[i];
    return NULL;
}

/* "<prefix><hex HMAC-SHA256(secret, msg)>" into 'out' (80 bytes). */
static void sign(const char *prefix, const char *secret, const char *msg, char *out)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    size_t p = strlen(prefix);
    crypto_hmac_sha256(secret, strlen(secret), msg, strlen(msg), mac);
    memcpy(out, prefix, p);
    crypto_hex(mac, sizeof(mac), out + p);
}

/* Verify 'body' from 'provider' with headers 'h' at NOW_S; the payload is 'body' parsed. */
static int verify(const char *provider, const char *body, struct headers *h, struct arena *a,
                  struct integ_event *ev, struct err *e)
{
    struct integ_inbound in;
    json_t *payload = json_loads(body, 0, NULL);
    int rc;

    memset(&in, 0, sizeof(in));
    in.body = body;
    in.len = strlen(body);
    in.payload = payload;
    in.header = header;
    in.header_ud = h;
    in.now_ms = NOW_S * 1000 + 999;
    err_clear(e);
    rc = integ_event_verify(&cfg, integ_provider_find(provider), &in, a, ev, e);
    if (ev->id) /* borrowed from the payload: kept past its release */
        ev->id = arena_strdup(a, ev->id);
    json_decref(payload);
    return rc;
}

/* Slack's headers for 'body' signed at 'ts' with 'secret'; the strings live in 'a'. */
static void slack_headers(struct headers *h, const char *body, long long ts, const char *secret,
                          struct arena *a)
{
    char sig[80];
    char *base = arena_printf(a, "v0:%lld:%s", ts, body);
    sign("v0=", secret, base, sig);
    memset(h, 0, sizeof(*h));
    h->name[0] = "X-Slack-Request-Timestamp";
    h->value[0] = arena_printf(a, "%lld", ts);
    h->name[1] = "X-Slack-Signature";
    h->value[1] = arena_strdup(a, sig);
}

static void github_headers(struct headers *h, const char *body, const char *event,
                           const char *secret, struct arena *a)
{
    char sig[80];
    sign("sha256=", secret, body, sig);
    memset(h, 0, sizeof(*h));
    h->name[0] = "X-Hub-Signature-256";
    h->value[0] = arena_strdup(a, sig);
    h->name[1] = "X-GitHub-Event";
    h->value[1] = event;
    h->name[2] = "X-GitHub-Delivery";
    h->value[2] = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
}

/* ---- Tests ---- */

static void signatures(void)
{
    subtest("signatures")
    {
        char sig[80];
        /* GitHub's documented example (docs.github.com, "Validating webhook deliveries"). */
        const char *want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b04"
                           "3e17";

        sign("sha256=", GITHUB_SECRET, "Hello, World!", sig);
        is_str(sig, want, "the HMAC of GitHub's example");
        ok(integ_signature_ok(want, "sha256=", GITHUB_SECRET, "Hello, World!", 13),
           "GitHub's example verifies");
        ok(!integ_signature_ok(want, "sha256=", GITHUB_SECRET, "Hello, World?", 13),
           "another body does not");
        ok(!integ_signature_ok(want, "sha256=", "another secret", "Hello, World!", 13),
           "another secret does not");
        ok(!integ_signature_ok(want + 7, "sha256=", GITHUB_SECRET, "Hello, World!", 13),
           "the hex without its prefix does not");
        ok(!integ_signature_ok(want, "v0=", GITHUB_SECRET, "Hello, World!", 13),
           "another scheme's prefix does not");
        sig[strlen(sig) - 1] = '\0';
        ok(!integ_signature_ok(sig, "sha256=", GITHUB_SECRET, "Hello, World!", 13),
           "a cut signature does not");
        ok(!integ_signature_ok(NULL, "sha256=", GITHUB_SECRET, "Hello, World!", 13),
           "no signature does not");
        ok(!integ_signature_ok(want, "sha256=", "", "Hello, World!", 13),
           "an empty secret verifies nothing");
    }
}

static void slack(void)
{
    subtest("slack")
    {
        const char *msg = "{\"type\":\"event_callback\",\"event_id\":\"Ev1\",\"event\":"
                          "{\"type\":\"message\",\"text\":\"hi\"}}";
        const char *bot = "{\"type\":\"event_callback\",\"event_id\":\"Ev2\",\"event\":"
                          "{\"type\":\"message\",\"bot_id\":\"B1\"}}";
        const char *bot2 = "{\"type\":\"event_callback\",\"event_id\":\"Ev3\",\"event\":"
                           "{\"type\":\"message\",\"subtype\":\"bot_message\"}}";
        const char *challenge = "{\"type\":\"url_verification\",\"challenge\":\"3eZbrw1a\"}";
        struct integ_event ev;
        struct headers h;
        struct arena a;
        struct err e;

        arena_init(&a);
        slack_headers(&h, msg, NOW_S, SLACK_SECRET, &a);
        is_int(verify("slack", msg, &h, &a, &ev, &e), 0, "a signed message");
        is_str(ev.name, "slack.message", "named slack.<event.type>");
        is_str(ev.id, "Ev1", "its delivery id is the event_id");
        ok(!ev.answer && !ev.duplicate, "nothing to answer instead");

        slack_headers(&h, msg, NOW_S - 300, SLACK_SECRET, &a);
        is_int(verify("slack", msg, &h, &a, &ev, &e), 0, "5 minutes old: still taken");
        slack_headers(&h, msg, NOW_S - 301, SLACK_SECRET, &a);
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH, "stale: refused");
        is_str(e.code, "invalid_signature", "as an invalid signature");
        ok(strstr(e.msg, "X-Slack-Request-Timestamp") != NULL, "saying the timestamp");
        ok(ev.name == NULL, "nothing named");
        slack_headers(&h, msg, NOW_S + 301, SLACK_SECRET, &a);
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH, "from the future: refused");
        slack_headers(&h, msg, NOW_S, SLACK_SECRET, &a);
        h.value[0] = "17900000x0";
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH, "a timestamp that is no number");
        h.name[0] = "X-Other";
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH, "no timestamp");

        slack_headers(&h, msg, NOW_S, "another secret", &a);
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH, "another secret: refused");
        ok(strstr(e.msg, "X-Slack-Signature") != NULL, "saying the signature");
        slack_headers(&h, msg, NOW_S - 1, SLACK_SECRET, &a);
        h.value[0] = arena_printf(&a, "%lld", NOW_S);
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH,
               "the timestamp is signed: changing it breaks the signature");
        h.name[1] = "X-Other";
        is_int(verify("slack", msg, &h, &a, &ev, &e), ERR_AUTH, "no signature");

        slack_headers(&h, challenge, NOW_S, SLACK_SECRET, &a);
        is_int(verify("slack", challenge, &h, &a, &ev, &e), 0, "url_verification");
        is_str(json_string_value(json_object_get(ev.answer, "challenge")), "3eZbrw1a",
               "answered with its challenge");
        ok(ev.name == NULL, "and starts nothing");
        json_decref(ev.answer);
        slack_headers(&h, challenge, NOW_S, "another secret", &a);
        is_int(verify("slack", challenge, &h, &a, &ev, &e), ERR_AUTH,
               "an unsigned challenge is not answered");
        ok(ev.answer == NULL, "no answer");

        slack_headers(&h, bot, NOW_S, SLACK_SECRET, &a);
        is_int(verify("slack", bot, &h, &a, &ev, &e), 0, "the bot's own message");
        ok(ev.name == NULL, "starts nothing (bot_id)");
        slack_headers(&h, bot2, NOW_S, SLACK_SECRET, &a);
        is_int(verify("slack", bot2, &h, &a, &ev, &e), 0, "a bot_message");
        ok(ev.name == NULL, "starts nothing (subtype)");
        slack_headers(&h, "{\"type\":\"app_rate_limited\"}", NOW_S, SLACK_SECRET, &a);
        is_int(verify("slack", "{\"type\":\"app_rate_limited\"}", &h, &a, &ev, &e), 0,
               "another kind of callback");
        ok(ev.name == NULL, "starts nothing");
        arena_cleanup(&a);
    }
}

static void github(void)
{
    subtest("github")
    {
        const char *opened = "{\"action\":\"opened\",\"issue\":{\"title\":\"Bug\"}}";
        const char *push = "{\"ref\":\"refs/heads/main\"}";
        struct integ_event ev;
        struct headers h;
        struct arena a;
        struct err e;

        arena_init(&a);
        github_headers(&h, opened, "issues", GITHUB_SECRET, &a);
        is_int(verify("github", opened, &h, &a, &ev, &e), 0, "a signed issue event");
        is_str(ev.name, "github.issues.opened", "named github.<event>.<action>");
        is_str(ev.id, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "its id is X-GitHub-Delivery");
        github_headers(&h, push, "push", GITHUB_SECRET, &a);
        is_int(verify("github", push, &h, &a, &ev, &e), 0, "a push");
        is_str(ev.name, "github.push", "no action: github.<event>");
        github_headers(&h, "{\"zen\":\"Keep it simple.\"}", "ping", GITHUB_SECRET, &a);
        is_int(verify("github", "{\"zen\":\"Keep it simple.\"}", &h, &a, &ev, &e), 0, "a ping");
        ok(ev.name == NULL, "starts nothing");

        github_headers(&h, opened, "issues", "another secret", &a);
        is_int(verify("github", opened, &h, &a, &ev, &e), ERR_AUTH, "another secret: refused");
        is_str(e.code, "invalid_signature", "as an invalid signature");
        ok(ev.name == NULL, "nothing named");
        github_headers(&h, push, "issues", GITHUB_SECRET, &a);
        is_int(verify("github", opened, &h, &a, &ev, &e), ERR_AUTH,
               "the signature of another body: refused");
        h.name[0] = "X-Hub-Signature";
        is_int(verify("github", push, &h, &a, &ev, &e), ERR_AUTH, "no X-Hub-Signature-256");
        arena_cleanup(&a);
    }
}

static void refusals(void)
{
    subtest("refusals")
    {
        struct integ_event ev;
        struct headers h;
        struct arena a;
        struct err e;

        arena_init(&a);
        memset(&cfg, 0, sizeof(cfg));
        github_headers(&h, "{}", "push", GITHUB_SECRET, &a);
        is_int(verify("github", "{}", &h, &a, &ev, &e), ERR_INVALID, "no signing secret");
        is_str(e.code, "integration_not_configured", "not configured");
        is_str(e.param, "provider", "the provider at fault");
        ok(strstr(e.msg, "WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET") != NULL, "naming the setting");
        is_int(verify("hubspot", "{}", &h, &a, &ev, &e), ERR_NOT_FOUND,
               "a provider that sends no events");
        arena_cleanup(&a);
    }
}

int main(void)
{
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.oauth[0][CONFIG_OAUTH_SIGNING_SECRET], CONFIG_OAUTH_VALUE_MAX, SLACK_SECRET);
    snprintf(cfg.oauth[3][CONFIG_OAUTH_SIGNING_SECRET], CONFIG_OAUTH_VALUE_MAX, GITHUB_SECRET);
    signatures();
    slack();
    github();
    refusals();
    return done_testing();
}
