/* SPDX-License-Identifier: MIT */
/*
 * stripe.c: what a Stripe event says, once it is known to be Stripe's (contract §21).
 *
 * DESIGN: both functions are pure (no globals, no I/O)
 * and fuzzed (tests/fuzz/fuzz_stripe.c). The signature is checked before the body is read at
 * all: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>...]` (other schemes, such as v0, are
 * skipped), the HMAC-SHA256 of "<t>.<body>" keyed by the whole endpoint secret, compared in
 * constant time with every v1 against every configured secret, and t within the tolerance of
 * now. The body is then read for what the store applies, and nothing else: amounts come from
 * the packs recorded with the session, never from the event alone.
 */
#include "ledger.h"

#include "../core/crypto.h"
#include "../core/mem.h"
#include "../core/str.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIG_HEADER_MAX 4096
#define SECRET_MAX 1024

/* The next comma-separated part of 'list' at '*at' (leading and trailing spaces cut) into
 * [*p, *p + *n); false at the end. */
static bool next_part(const char *list, size_t len, size_t *at, const char **p, size_t *n)
{
    size_t i = *at, j;

    if (i > len)
        return false;
    j = i;
    while (j < len && list[j] != ',')
        j++;
    *at = j + 1;
    while (i < j && list[i] == ' ')
        i++;
    while (j > i && list[j - 1] == ' ')
        j--;
    *p = list + i;
    *n = j - i;
    return true;
}

/* Whether hex 'h' of 'n' characters is the 32-byte 'mac'. */
static bool hex_matches(const char *h, size_t n, const unsigned char mac[32])
{
    unsigned char got[32];

    if (n != 64)
        return false;
    for (size_t i = 0; i < 32; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char c = h[2 * i + (size_t)k];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0)
                return false;
            v = v * 16 + d;
        }
        got[i] = (unsigned char)v;
    }
    return crypto_equal(got, mac, 32);
}

/* See ledger.h. */
int ledger_stripe_verify(const char *header, const char *body, size_t len,
                         const char *const secrets[], size_t nsecrets, int64_t now_s,
                         int64_t tolerance_s, struct err *e)
{
    size_t hlen = header ? strlen(header) : 0, at = 0, n;
    const char *p;
    uint64_t t = 0;
    bool have_t = false, any_v1 = false;
    char prefix[24], *msg;
    int pn;

    if (!hlen || hlen > SIG_HEADER_MAX)
        goto bad;
    while (next_part(header, hlen, &at, &p, &n)) {
        if (n > 2 && p[0] == 't' && p[1] == '=') {
            struct str v = {p + 2, n - 2};
            if (have_t || str_to_u64(v, &t) || t > 253402300799ull)
                goto bad;
            have_t = true;
        } else if (n > 3 && memcmp(p, "v1=", 3) == 0) {
            any_v1 = true;
        }
    }
    if (!have_t || !any_v1)
        goto bad;
    if ((int64_t)t < now_s - tolerance_s || (int64_t)t > now_s + tolerance_s)
        return err_set(e, ERR_AUTH, "invalid_signature", NULL,
                       "The Stripe-Signature timestamp is outside the %lld s tolerance.",
                       (long long)tolerance_s);
    pn = snprintf(prefix, sizeof(prefix), "%llu.", (unsigned long long)t);
    msg = xmalloc((size_t)pn + len + 1);
    memcpy(msg, prefix, (size_t)pn);
    if (len)
        memcpy(msg + pn, body, len);
    for (size_t k = 0; k < nsecrets; k++) {
        size_t slen = strlen(secrets[k]);
        unsigned char mac[32];
        if (!slen || slen > SECRET_MAX)
            continue;
        if (crypto_hmac_sha256(secrets[k], slen, msg, (size_t)pn + len, mac)) {
            free(msg);
            return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no HMAC");
        }
        at = 0;
        while (next_part(header, hlen, &at, &p, &n)) {
            if (n > 3 && memcmp(p, "v1=", 3) == 0 && hex_matches(p + 3, n - 3, mac)) {
                free(msg);
                return 0;
            }
        }
    }
    free(msg);
bad:
    return err_set(e, ERR_AUTH, "invalid_signature", NULL,
                   "The Stripe-Signature header does not match the body with any configured "
                   "webhook secret.");
}

/* The text member 'key' of object 'o', copied into 'a', or NULL. */
static const char *text_of(json_t *o, const char *key, struct arena *a)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? arena_strndup(a, json_string_value(v), json_string_length(v)) : NULL;
}

/* See ledger.h. */
int ledger_stripe_parse(const char *body, size_t len, struct arena *a,
                        struct store_stripe_event *out, struct err *e)
{
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL), *obj, *v;
    const char *type;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (!json_is_object(root)) {
        rc = err_set(e, ERR_INVALID, "invalid_request", NULL, "The event is not a JSON object.");
        goto out;
    }
    out->id = text_of(root, "id", a);
    out->type = type = text_of(root, "type", a);
    v = json_object_get(root, "livemode");
    obj = json_object_get(json_object_get(root, "data"), "object");
    if (!out->id || !*out->id || strlen(out->id) > 255 || !type || !json_is_boolean(v) ||
        !json_is_object(obj)) {
        rc = err_set(e, ERR_INVALID, "invalid_request", NULL,
                     "The event has no id, type, livemode or data.object.");
        goto out;
    }
    out->livemode = json_is_true(v);
    out->object_id = text_of(obj, "id", a);
    out->payment_intent = text_of(obj, "payment_intent", a);
    if (strcmp(type, "checkout.session.completed") == 0 ||
        strcmp(type, "checkout.session.async_payment_succeeded") == 0) {
        const char *status = text_of(obj, "payment_status", a);
        out->kind = strcmp(type, "checkout.session.async_payment_succeeded") == 0 ||
                            (status && strcmp(status, "paid") == 0)
                        ? STORE_STRIPE_PAID
                        : STORE_STRIPE_UNPAID;
        out->org_id = text_of(obj, "client_reference_id", a);
    } else if (strcmp(type, "charge.refunded") == 0 ||
               strcmp(type, "charge.dispute.created") == 0) {
        json_t *amount = json_object_get(obj, "amount");
        json_t *refunded = json_object_get(obj, "amount_refunded");
        out->kind = type[7] == 'r' ? STORE_STRIPE_REFUND : STORE_STRIPE_DISPUTE;
        if (!json_is_integer(amount) || json_integer_value(amount) <= 0 ||
            (out->kind == STORE_STRIPE_REFUND &&
             (!json_is_integer(refunded) || json_integer_value(refunded) < 0 ||
              json_integer_value(refunded) > json_integer_value(amount)))) {
            rc = err_set(e, ERR_INVALID, "invalid_request", NULL,
                         "The %s event has no valid amount.", type);
            goto out;
        }
        out->amount = json_integer_value(amount);
        out->amount_refunded =
            out->kind == STORE_STRIPE_REFUND ? json_integer_value(refunded) : out->amount;
    } else {
        out->kind = STORE_STRIPE_OTHER;
    }
    if (out->kind != STORE_STRIPE_OTHER && (!out->object_id || !*out->object_id)) {
        rc =
            err_set(e, ERR_INVALID, "invalid_request", NULL, "The %s event names no object.", type);
        goto out;
    }
out:
    json_decref(root);
    return rc;
}
