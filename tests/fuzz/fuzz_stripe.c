/* SPDX-License-Identifier: MIT */
/*
 * fuzz_stripe: what a Stripe event brings (ledger/stripe.c, core/config.c's packs).
 *   1. The input split at its first newline: a Stripe-Signature header and a body.
 *      ledger_stripe_verify() must answer 0 or 401 invalid_signature, and 0 only when the
 *      header's v1 really is the HMAC of "t.body" under one of the two secrets (checked here by
 *      signing again); a header signed here for that body with a timestamp inside the
 *      tolerance must always be accepted.
 *   2. The input as an event body: ledger_stripe_parse() answers 0 or 400; on 0 the event has
 *      an id and type, a refund's amounts are 0 <= refunded <= amount and amount > 0, and a
 *      credit-changing kind names its object.
 *   3. The input as a packs setting: config_parse_packs() accepts at most CONFIG_PACKS_MAX
 *      packs of distinct, non-empty price ids with credits from 1 to 10^9, or names the
 *      setting in its error.
 * Pure: no I/O; the arena is released.
 */
#include "../../src/core/config.h"
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/ledger/ledger.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_stripe: check failed at line %d: %s\n", __LINE__, #c);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define NOW 1765000000LL

static const char *const secrets[] = {"whsec_one", "whsec_two"};

/* "t=<t>,v1=<hex>" of 'body' under 'secret' into 'out' (160 bytes). */
static void sign(const char *secret, long long t, const char *body, size_t len, char *out)
{
    char *msg = xmalloc(len + 32);
    unsigned char mac[32];
    int pn = snprintf(msg, 32, "%lld.", t);
    size_t at;
    memcpy(msg + pn, body, len);
    crypto_hmac_sha256(secret, strlen(secret), msg, (size_t)pn + len, mac);
    free(msg);
    at = (size_t)snprintf(out, 160, "t=%lld,v1=", t);
    for (size_t i = 0; i < 32; i++)
        at += (size_t)snprintf(out + at, 160 - at, "%02x", mac[i]);
}

static void verify_part(const char *text, size_t size)
{
    const char *nl = memchr(text, '\n', size);
    size_t hlen = nl ? (size_t)(nl - text) : size;
    char *header = xmalloc(hlen + 1);
    const char *body = nl ? nl + 1 : "";
    size_t blen = nl ? size - hlen - 1 : 0;
    char good[160];
    struct err e;
    int rc;

    memcpy(header, text, hlen);
    header[hlen] = '\0';
    err_clear(&e);
    rc = ledger_stripe_verify(header, body, blen, secrets, 2, NOW, 300, &e);
    CHECK(rc == 0 || (rc == ERR_AUTH && strcmp(e.code, "invalid_signature") == 0));
    if (rc == 0) {
        /* some v1 of the header is the signature of one secret at its t */
        const char *t = strstr(header, "t=");
        bool found = false;
        CHECK(t != NULL);
        for (int k = 0; k < 2 && !found; k++) {
            char mine[160];
            sign(secrets[k], strtoll(t + 2, NULL, 10), body, blen, mine);
            found = strstr(header, strstr(mine, "v1=")) != NULL;
        }
        CHECK(found);
    }
    sign(secrets[size % 2], NOW - (long long)(size % 300), body, blen, good);
    err_clear(&e);
    CHECK(ledger_stripe_verify(good, body, blen, secrets, 2, NOW, 300, &e) == 0);
    free(header);
}

static void parse_part(const char *text, size_t size)
{
    struct store_stripe_event ev;
    struct arena a;
    struct err e;
    int rc;

    arena_init(&a);
    err_clear(&e);
    rc = ledger_stripe_parse(text, size, &a, &ev, &e);
    CHECK(rc == 0 || (rc == ERR_INVALID && strcmp(e.code, "invalid_request") == 0));
    if (rc == 0) {
        CHECK(ev.id && *ev.id && ev.type);
        if (ev.kind == STORE_STRIPE_REFUND || ev.kind == STORE_STRIPE_DISPUTE)
            CHECK(ev.amount > 0 && ev.amount_refunded >= 0 && ev.amount_refunded <= ev.amount);
        if (ev.kind != STORE_STRIPE_OTHER)
            CHECK(ev.object_id && *ev.object_id);
    }
    arena_cleanup(&a);
}

static void packs_part(const char *text, size_t size)
{
    struct config_pack packs[CONFIG_PACKS_MAX];
    char *s = xmalloc(size + 1);
    size_t n = 0;
    struct err e;
    int rc;

    memcpy(s, text, size);
    s[size] = '\0';
    err_clear(&e);
    rc = config_parse_packs(s, "WORKFORCE_CREDIT_PACKS", packs, &n, &e);
    if (rc == 0) {
        CHECK(n <= CONFIG_PACKS_MAX);
        for (size_t i = 0; i < n; i++) {
            CHECK(packs[i].price_id[0] && packs[i].credits >= 1 && packs[i].credits <= 1000000000);
            for (size_t j = 0; j < i; j++)
                CHECK(strcmp(packs[i].price_id, packs[j].price_id) != 0);
        }
    } else {
        CHECK(rc == ERR_INVALID && strcmp(e.param, "WORKFORCE_CREDIT_PACKS") == 0);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    if (size > 65536)
        return 0;
    verify_part(text, size);
    parse_part(text, size);
    packs_part(text, size);
    return 0;
}
