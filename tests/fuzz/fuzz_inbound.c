/* SPDX-License-Identifier: MIT */
/*
 * fuzz_inbound: integ_event_verify() (integrations/inbound.c), which reads what a provider
 * sends to a public events URL: its headers and its body, from anyone on the network. The
 * first byte picks the provider (bit 0: Slack or GitHub) and whether the harness signs the
 * body rightly (bit 1), so that the naming behind the signature is reached; up to the first
 * newline is the header the provider sets (Slack's timestamp, GitHub's event name); the rest
 * is the body. A body that is not signed rightly is always refused as invalid_signature; a
 * verified one is named "slack.*" or "github.*" within its bounds, or starts nothing, and only
 * Slack answers a challenge. Pure: the arena is released.
 */
#include "../../src/core/config.h"
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/integrations/inbound.h"
#include "../../src/integrations/providers.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_inbound: check failed at line %d: %s\n", __LINE__, #c);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define NOW_MS 1790000000000LL
#define SECRET "fuzz-signing-secret"

static struct config cfg;

struct sent {
    const char *first; /* Slack's timestamp or GitHub's event */
    const char *signature;
    bool slack;
};

static const char *header(void *ud, const char *name)
{
    const struct sent *s = ud;
    if (strcmp(name, s->slack ? "X-Slack-Request-Timestamp" : "X-GitHub-Event") == 0)
        return s->first;
    if (strcmp(name, s->slack ? "X-Slack-Signature" : "X-Hub-Signature-256") == 0)
        return s->signature;
    return strcmp(name, "X-GitHub-Delivery") == 0 ? "delivery-1" : NULL;
}

/* The signature of 'body' as the provider makes it, into 'out' (80 bytes, arena). */
static const char *sign(const struct sent *s, const char *body, size_t len, struct arena *a)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    char *out = arena_alloc(a, 80);
    char *msg = arena_alloc(a, len + strlen(s->first) + 8);
    size_t n = 0;

    if (s->slack)
        n = (size_t)snprintf(msg, len + strlen(s->first) + 8, "v0:%s:", s->first);
    memcpy(msg + n, body, len);
    crypto_hmac_sha256(SECRET, strlen(SECRET), msg, n + len, mac);
    snprintf(out, 80, "%s", s->slack ? "v0=" : "sha256=");
    crypto_hex(mac, sizeof(mac), out + strlen(out));
    return out;
}

static void check(const struct integ_event *ev, int rc, const struct err *e, bool slack,
                  bool signed_rightly)
{
    if (!signed_rightly) {
        CHECK(rc == ERR_AUTH && strcmp(e->code, "invalid_signature") == 0);
        CHECK(!ev->name && !ev->answer);
        return;
    }
    if (rc) { /* only Slack's timestamp can still be refused */
        CHECK(slack && rc == ERR_AUTH);
        return;
    }
    CHECK(!ev->answer || (slack && !ev->name));
    if (ev->name && slack)
        CHECK(strncmp(ev->name, "slack.", 6) == 0 && strlen(ev->name) <= 6 + 100);
    if (ev->name && !slack)
        CHECK(strncmp(ev->name, "github.", 7) == 0 && strlen(ev->name) <= 7 + 60 + 1 + 60);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl;
    struct integ_inbound in;
    struct integ_event ev;
    struct sent s;
    struct arena a;
    struct err e;
    json_t *payload;
    bool signed_rightly;
    int rc;

    if (size < 1)
        return 0;
    if (!cfg.oauth[0][CONFIG_OAUTH_SIGNING_SECRET][0]) {
        snprintf(cfg.oauth[0][CONFIG_OAUTH_SIGNING_SECRET], CONFIG_OAUTH_VALUE_MAX, SECRET);
        snprintf(cfg.oauth[3][CONFIG_OAUTH_SIGNING_SECRET], CONFIG_OAUTH_VALUE_MAX, SECRET);
    }
    arena_init(&a);
    s.slack = !(data[0] & 1);
    signed_rightly = data[0] & 2;
    nl = memchr(data + 1, '\n', size - 1);
    s.first = nl ? arena_strndup(&a, (const char *)data + 1, (size_t)(nl - data - 1)) : "";
    memset(&in, 0, sizeof(in));
    in.body = nl ? (const char *)nl + 1 : (const char *)data + 1;
    in.len = size - (size_t)((const uint8_t *)in.body - data);
    s.signature = signed_rightly ? sign(&s, in.body, in.len, &a) : "v0=00";
    payload = json_loadb(in.body, in.len, 0, NULL);
    in.payload = payload;
    in.header = header;
    in.header_ud = &s;
    in.now_ms = NOW_MS;
    err_clear(&e);
    rc = integ_event_verify(&cfg, integ_provider_find(s.slack ? "slack" : "github"), &in, &a, &ev,
                            &e);
    check(&ev, rc, &e, s.slack, signed_rightly);
    json_decref(ev.answer);
    json_decref(payload);
    arena_cleanup(&a);
    return 0;
}
