# SPDX-License-Identifier: MIT
"""Credits bought with Stripe, the ledger and usage (issue 29, contract §21), black-box.

The server talks to a stand-in of Stripe's API (tests/stripe/stripe_api.mjs, through
stripelib.StripeStandIn): checkout sessions are created there, its pay page plays the customer
and delivers checkout.session.completed signed with the official `stripe` npm package, and its
control routes send refunds and disputes. Events a test makes itself (replays, wrong modes,
other organizations, bad signatures) are signed by the stand-in too: no test computes an HMAC.

- Packs per mode; checkout: who may (owners, keys whose scopes name billing), validation, not
  configured, Stripe failing (502), exactly the documented form fields and the bearer key sent.
- Events: signatures (missing, wrong, tampered, stale, rotated secrets), replays, refunds before
  their purchase, livemode and organization mismatches, unknown sessions, delayed payments,
  partial refunds (the floor rule on the cumulative amount_refunded), disputes, take-backs
  beyond the balance (shortfall), test-mode purchases on the test balance.
- The ledger (newest first, filters, pages, bad parameters) and usage (periods, by day, by
  employee after live chats; the sums equal the ledger's chat entries).
- After every test: each balance touched equals the sum of its ledger entries (and
  `workforce credits check` agrees); no answer and no line of the server's log holds the Stripe
  secret key or a webhook secret.
"""

import datetime
import json
import os
import sqlite3
import subprocess
import threading
import time
import unittest
import urllib.parse

from chatlib import ANY_PARAM, ChatTestCase
from harness import GENEROUS_LIMITS, REPO_ROOT, TS_RE, parse_ts, sqlite_only
from stripelib import (EVENTS_PATH, StripeStandIn, charge, checkout_session, dispute, event,
                       rand, raw, standin_missing)
from test_people import People

LIVE_SK = "sk_live_" + rand(32)
TEST_SK = "sk_test_" + rand(32)
WH_LIVE = "whsec_" + rand(32)        # the current live webhook secret
WH_LIVE_OLD = "whsec_" + rand(32)    # the previous one, still listed (rotation)
WH_GONE = "whsec_" + rand(32)        # a secret no longer listed
WH_TEST = "whsec_" + rand(32)
SECRETS = (LIVE_SK, TEST_SK, WH_LIVE, WH_LIVE_OLD, WH_TEST)

# price id -> (credits, Stripe's unit_amount in cents)
LIVE_PACKS = {"price_small": (1000, 999), "price_big": (5000, 4500)}
TEST_PACKS = {"price_tsmall": (300, 300)}
# Workforce sells it, Stripe does not know it (an archived price): Stripe answers 400
STALE_PACK = ("price_stale", 100)

TX_FIELDS = {"id", "object", "amount", "balance_after", "shortfall", "reason", "reference",
             "employee_id", "mode", "created_at"}
CHECKOUT_FIELDS = {"id", "object", "url", "expires_at", "price_id", "credits", "mode"}
REASONS = {"purchase", "refund", "dispute", "chat", "task_run", "workflow_step", "grant",
           "adjustment"}
FORM_FIELDS = {"mode", "line_items[0][price]", "line_items[0][quantity]", "client_reference_id",
               "metadata[workforce_org]", "metadata[workforce_mode]", "success_url",
               "cancel_url"}
OK_URL = "https://app.example.com/billing/done?session={CHECKOUT_SESSION_ID}"
NO_URL = "https://app.example.com/billing"
RECEIVED = {"received": True}


def packs_env(packs):
    return ",".join("%s:%d" % (p, c) for p, (c, _) in packs.items())


def standin_prices(packs):
    return {p: {"unit_amount": cents, "currency": "usd"} for p, (_, cents) in packs.items()}


class Org:
    """An organization of a test: its slug, id, owner session and keys."""

    def __init__(self, slug, org_id, owner, live, test):
        self.slug, self.id, self.owner, self.live, self.test = slug, org_id, owner, live, test


@unittest.skipIf(standin_missing(), standin_missing() or "")
class BillingCase(ChatTestCase):
    """A server pointed at a Stripe stand-in. Subclasses set 'stripe_env' (the server's Stripe
    settings) and 'standin_config'; the stand-in's URL and events_url are filled in."""

    stripe_env = {}
    standin_config = {}
    stripe = None

    @classmethod
    def setUpClass(cls):
        cls.stripe = StripeStandIn(cls.standin_config).start()
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
               "WORKFORCE_SESSION_RATE_LIMIT": "100000/100000/100",
               "WORKFORCE_STRIPE_API_URL": cls.stripe.url}
        env.update(cls.stripe_env)
        cls.server_env = env
        cls.leaks = []
        try:
            super().setUpClass()
        except BaseException:
            cls.stripe.stop()
            raise
        cls.watch_answers(cls.server)
        cls.stripe.configure(events_url=cls.server.base_url + EVENTS_PATH)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.stripe.stop()

    @classmethod
    def watch_answers(cls, srv):
        """Every answer of srv.request() is searched for the Stripe secrets (cls.leaks)."""
        request = srv.request

        def watched(method, path, *a, **kw):
            r = request(method, path, *a, **kw)
            blob = r.body + "".join("%s: %s\n" % hv for hv in r.headers).encode()
            for s in SECRETS:
                if s.encode() in blob:
                    cls.leaks.append("%s %s -> %r" % (method, path, r))
            return r
        srv.request = watched

    def setUp(self):
        self.p = People(self)
        self.touched = []

    def tearDown(self):
        """The invariants after every test: balances equal their ledgers, no secret shown."""
        for org in self.touched:
            for key in (org.live, org.test):
                with self.subTest(invariant="balance == sum(ledger)", org=org.slug,
                                  mode=key[4:8]):
                    entries = self.ledger(key)
                    bal = self.balance(key)
                    self.assertEqual(bal, sum(e["amount"] for e in entries),
                                     "%s: balance %d, ledger %r" % (org.slug, bal, entries))
                    if entries:
                        self.assertEqual(entries[0]["balance_after"], bal, entries[0])
        p = self.server.cli("credits", "check")
        self.assertEqual(p.returncode, 0, "credits check: %s %s" % (p.stdout, p.stderr))
        self.assertEqual(self.leaks, [], "a Stripe secret in an answer")
        for d in self.stripe.deliveries():  # the answers to Stripe's deliveries too
            for s in SECRETS:
                self.assertNotIn(s, d["body"] or "", "a Stripe secret in an answer to Stripe")
        log = self.server.log_text()
        for s in SECRETS:
            self.assertNotIn(s, log, "a Stripe secret in the server's log")

    # -- organizations and callers --

    def org(self, name, credits=0):
        """A fresh organization (created with 'credits'), its owner signed in, a live key (full
        scope) and a test key; its balances are checked against its ledger after the test."""
        slug = "%s-%s" % (name, rand(8).lower())
        live = self.server.create_key(slug, credits=credits)
        test = self.server.create_key(slug, mode="test")
        owner = self.p.owner(slug, "owner@%s.test" % slug)
        org_id = self.assertJson(self.server.get("/v1/account", key=live))["id"]
        o = Org(slug, org_id, owner, live, test)
        self.touched.append(o)
        return o

    def call(self, s, method, path, body=None, mode=None):
        """A request of session 's' (a dict of People) or key 's' (a str); mode "test" sends
        Workforce-Mode: test with a session."""
        if isinstance(s, str):
            return self.server.request(method, path, json_body=body, key=s)
        headers = {"Workforce-Mode": "test"} if mode == "test" else None
        return self.p.call(s, method, path, body, headers=headers)

    def checkout(self, s, price_id, mode=None, **fields):
        body = {"price_id": price_id, "success_url": OK_URL, "cancel_url": NO_URL}
        body.update(fields)
        body = {k: v for k, v in body.items() if v is not None}
        return self.call(s, "POST", "/v1/billing/checkout", body, mode=mode)

    def checkout_ok(self, s, price_id, mode=None):
        cs = self.assertJson(self.checkout(s, price_id, mode=mode))
        self.assertEqual(set(cs), CHECKOUT_FIELDS, cs)
        return cs

    def buy(self, org, price_id="price_small", mode=None):
        """Checkout by the owner, then the customer pays on the stand-in's page: the event is
        delivered and acknowledged. The checkout answer."""
        cs = self.checkout_ok(org.owner, price_id, mode=mode)
        r = self.stripe.pay(cs["id"])
        self.assertEqual(r.status, 303, r)
        d = self.delivery_of(r.header("X-Event-Id"))
        self.assertEqual(d["status"], 200, d)
        self.assertEqual(json.loads(d["body"]), RECEIVED, d)
        return cs

    def delivery_of(self, event_id):
        ds = [d for d in self.stripe.deliveries() if d["event_id"] == event_id]
        self.assertTrue(ds, "no delivery of %s" % event_id)
        return ds[-1]

    def post_event(self, ev, secret=WH_LIVE, t=None, header=None, body=None):
        """POST the event as Stripe does, signed by the stand-in with 'secret' at 't' (unless
        'header' is given; header False: no Stripe-Signature)."""
        data = body if body is not None else raw(ev)
        if header is None:
            header = self.stripe.sign(data, secret, t)
        headers = {"User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"}
        if header is not False:
            headers["Stripe-Signature"] = header
        return self.server.request("POST", EVENTS_PATH, body=data, headers=headers,
                                   content_type="application/json; charset=utf-8")

    def post_event_ok(self, ev, secret=WH_LIVE, t=None):
        r = self.post_event(ev, secret, t)
        self.assertEqual(self.assertJson(r), RECEIVED)
        return r

    def pi_of(self, session_id):
        """The payment_intent the stand-in gave the session when it was paid."""
        for ev in self.stripe.events():
            if ev["type"].startswith("checkout.session.") and \
                    ev["data"]["object"]["id"] == session_id and \
                    ev["data"]["object"]["payment_intent"]:
                return ev["data"]["object"]["payment_intent"]
        self.fail("session %s was not paid" % session_id)

    # -- reading --

    def ledger_page(self, s, mode=None, **q):
        path = "/v1/account/credit_transactions"
        if q:
            path += "?" + urllib.parse.urlencode(q)
        body = self.assertJson(self.call(s, "GET", path, mode=mode))
        self.assertEqual(set(body) - {"next_cursor"}, {"credit_transactions", "has_more"}, body)
        return body

    def ledger(self, s, mode=None, **q):
        """Every entry (walking the pages of 100), newest first."""
        items, before = [], None
        for _ in range(1000):
            qq = dict(q, limit=100)
            if before:
                qq["before"] = before
            body = self.ledger_page(s, mode, **qq)
            items += body["credit_transactions"]
            if not body["has_more"]:
                return items
            before = body["next_cursor"]
        self.fail("the ledger did not end")

    def balance(self, s, mode=None):
        return self.assertJson(self.call(s, "GET", "/v1/account", mode=mode))["credits_remaining"]

    def checkTx(self, tx, reason, amount, mode="live", reference=None):
        self.assertEqual(set(tx), TX_FIELDS, tx)
        self.assertRegex(tx["id"], r"^ctx_[A-Za-z0-9]{16,}$")
        self.assertEqual(tx["object"], "credit_transaction")
        self.assertEqual((tx["reason"], tx["amount"], tx["mode"]), (reason, amount, mode), tx)
        self.assertRegex(tx["created_at"], TS_RE)
        self.assertLessEqual(abs(parse_ts(tx["created_at"]) - time.time()), 600, tx)
        self.assertGreaterEqual(tx["balance_after"], 0, tx)
        self.assertGreaterEqual(tx["shortfall"], 0, tx)
        if reference is not None:
            self.assertEqual(tx["reference"], reference, tx)
        return tx


LIVE_ENV = {
    "WORKFORCE_STRIPE_SECRET_KEY": LIVE_SK,
    "WORKFORCE_STRIPE_WEBHOOK_SECRET": "%s,%s" % (WH_LIVE, WH_LIVE_OLD),
    "WORKFORCE_CREDIT_PACKS": packs_env(LIVE_PACKS) + ",%s:%d" % STALE_PACK,
    "WORKFORCE_STRIPE_TEST_SECRET_KEY": TEST_SK,
    "WORKFORCE_STRIPE_TEST_WEBHOOK_SECRET": WH_TEST,
    "WORKFORCE_TEST_CREDIT_PACKS": packs_env(TEST_PACKS),
}
STANDIN = {
    "secret_keys": {"live": LIVE_SK, "test": TEST_SK},
    "prices": {"live": standin_prices(LIVE_PACKS), "test": standin_prices(TEST_PACKS)},
    "webhook_secrets": {"live": WH_LIVE, "test": WH_TEST},
}


class CheckoutTest(BillingCase):
    stripe_env = LIVE_ENV
    standin_config = STANDIN

    def test_packs_per_mode(self):
        o = self.org("packs")
        want_live = sorted([{"price_id": p, "credits": c} for p, (c, _) in LIVE_PACKS.items()] +
                           [{"price_id": STALE_PACK[0], "credits": STALE_PACK[1]}],
                           key=lambda x: x["price_id"])
        want_test = [{"price_id": p, "credits": c} for p, (c, _) in TEST_PACKS.items()]
        viewer = self.p.member_of(o.owner, "v@%s.test" % o.slug, "viewer")
        billing = self.server.create_key(o.slug, scopes="billing")
        n0 = len(self.stripe.requests())
        for who, s, mode, want in (("owner", o.owner, None, want_live),
                                   ("viewer", viewer, None, want_live),
                                   ("live key, no scopes", o.live, None, want_live),
                                   ("key with billing", billing, None, want_live),
                                   ("owner in test mode", o.owner, "test", want_test),
                                   ("test key", o.test, None, want_test)):
            with self.subTest(who=who):
                body = self.assertJson(self.call(s, "GET", "/v1/billing/packs", mode=mode))
                self.assertEqual(set(body), {"packs"}, body)
                self.assertEqual(sorted(body["packs"], key=lambda x: x["price_id"]), want, body)
        self.assertEqual(self.stripe.requests()[n0:], [], "packs asked Stripe")
        chat_only = self.server.create_key(o.slug, scopes="chat")
        self.assertError(self.server.get("/v1/billing/packs", key=chat_only), 403,
                         "permission_denied", ANY_PARAM)

    def test_checkout_by_the_owner(self):
        o = self.org("co")
        n0 = len(self.stripe.requests())
        cs = self.checkout_ok(o.owner, "price_small")
        reqs = self.stripe.requests()[n0:]
        self.assertEqual(len(reqs), 1, reqs)
        q = reqs[0]
        self.assertEqual((q["method"], q["path"]), ("POST", "/v1/checkout/sessions"))
        self.assertEqual(q["headers"].get("authorization"), "Bearer " + LIVE_SK)
        self.assertEqual(q["headers"].get("content-type", "").split(";")[0].strip(),
                         "application/x-www-form-urlencoded")
        self.assertTrue(q["headers"].get("idempotency-key"), q["headers"])
        self.assertEqual(q["form"], {
            "mode": "payment", "line_items[0][price]": "price_small",
            "line_items[0][quantity]": "1", "client_reference_id": o.id,
            "metadata[workforce_org]": o.id, "metadata[workforce_mode]": "live",
            "success_url": OK_URL, "cancel_url": NO_URL})
        # the answer: what Stripe answered, and the pack
        self.assertEqual([e for e in self.stripe.events()
                          if e["data"]["object"].get("id") == cs["id"]], [], "paid already?")
        self.assertRegex(cs["id"], r"^cs_live_[A-Za-z0-9]+$")
        self.assertEqual(cs["object"], "checkout_session")
        self.assertEqual(cs["url"], "%s/pay/%s" % (self.stripe.url, cs["id"]))
        self.assertLessEqual(abs(cs["expires_at"] - (time.time() + 86400)), 120, cs)
        self.assertEqual((cs["price_id"], cs["credits"], cs["mode"]), ("price_small", 1000, "live"))
        # nothing is credited by a checkout
        self.assertEqual(self.balance(o.live), 0)
        self.assertEqual(self.ledger(o.live), [])
        # the pay page is there, with its button
        page = self.stripe.pay_page(cs["id"])
        self.assertEqual(page.status, 200)
        self.assertIn(b">Pay</button>", page.body)

    def test_checkout_in_test_mode(self):
        o = self.org("cot")
        n0 = len(self.stripe.requests())
        cs = self.checkout_ok(o.owner, "price_tsmall", mode="test")
        self.assertRegex(cs["id"], r"^cs_test_")
        self.assertEqual((cs["price_id"], cs["credits"], cs["mode"]), ("price_tsmall", 300, "test"))
        q = self.stripe.requests()[n0:][0]
        self.assertEqual(q["headers"].get("authorization"), "Bearer " + TEST_SK)
        self.assertEqual(set(q["form"]), FORM_FIELDS, q["form"])
        self.assertEqual(q["form"]["metadata[workforce_mode]"], "test")
        # a live pack is not a test pack, and the other way round
        self.assertError(self.checkout(o.owner, "price_small", mode="test"), 400,
                         "invalid_request", "price_id")
        self.assertError(self.checkout(o.owner, "price_tsmall"), 400, "invalid_request",
                         "price_id")

    def test_who_may_check_out(self):
        o = self.org("who")
        for role in ("admin", "developer", "member", "viewer"):
            s = self.p.member_of(o.owner, "%s@%s.test" % (role, o.slug), role)
            with self.subTest(role=role):
                self.assertError(self.checkout(s, "price_small"), 403, "permission_denied",
                                 ANY_PARAM)
        n0 = len(self.stripe.requests())
        # a key without scopes is not enough, nor one whose scopes do not name billing
        self.assertError(self.checkout(o.live, "price_small"), 403, "permission_denied",
                         ANY_PARAM)
        chat = self.server.create_key(o.slug, scopes="chat,employees:read")
        self.assertError(self.checkout(chat, "price_small"), 403, "permission_denied", ANY_PARAM)
        self.assertEqual(self.stripe.requests()[n0:], [], "a refused checkout reached Stripe")
        # a key whose scopes name billing: its mode
        billing = self.server.create_key(o.slug, scopes="billing,chat")
        cs = self.checkout_ok(billing, "price_big")
        self.assertEqual((cs["credits"], cs["mode"]), (5000, "live"))
        tbilling = self.server.create_key(o.slug, mode="test", scopes="billing")
        cs = self.checkout_ok(tbilling, "price_tsmall")
        self.assertEqual((cs["credits"], cs["mode"]), (300, "test"))
        self.assertEqual([r["form"]["client_reference_id"] for r in self.stripe.requests()[n0:]],
                         [o.id, o.id])

    def test_checkout_validation(self):
        o = self.org("val")
        n0 = len(self.stripe.requests())
        cases = [
            ({"price_id": "price_nope"}, "price_id"),
            ({"price_id": "price_small_"}, "price_id"),
            ({"price_id": 7}, "price_id"),
            ({"price_id": None}, "price_id"),
            ({"success_url": None}, "success_url"),
            ({"cancel_url": None}, "cancel_url"),
            ({"success_url": "/relative/path"}, "success_url"),
            ({"success_url": "ftp://example.com/x"}, "success_url"),
            ({"success_url": "javascript:alert(1)"}, "success_url"),
            ({"success_url": ""}, "success_url"),
            ({"success_url": 5}, "success_url"),
            ({"cancel_url": "example.com/back"}, "cancel_url"),
            ({"cancel_url": "http://"}, "cancel_url"),
            ({"success_url": "https://example.com/" + "a" * 2100}, "success_url"),
            ({"extra": 1}, "extra"),
        ]
        for fields, param in cases:
            body = {"price_id": "price_small", "success_url": OK_URL, "cancel_url": NO_URL}
            body.update(fields)
            body = {k: v for k, v in body.items() if v is not None}  # None: left out
            with self.subTest(body=body):
                r = self.call(o.owner, "POST", "/v1/billing/checkout", body)
                self.assertError(r, 400, "invalid_request", param)
        self.assertError(self.call(o.owner, "POST", "/v1/billing/checkout", None), 400,
                         "invalid_request", ANY_PARAM)
        self.assertEqual(self.stripe.requests()[n0:], [], "an invalid checkout reached Stripe")

    def test_form_encoding(self):
        """URLs with &, =, +, %, brackets, a fragment and non-ASCII reach Stripe unchanged: the
        form is encoded (no field of Stripe's can be slipped in through a URL)."""
        o = self.org("enc")
        ok = ("https://app.example.com/ok?a=1&mode=subscription&line_items[0][price]=price_big"
              "&b=%20x+y#frag")
        back = "https://app.example.com/back?q=[1]&r=\u00e9t\u00e9&metadata[workforce_org]=x"
        n0 = len(self.stripe.requests())
        cs = self.assertJson(self.checkout(o.owner, "price_small", success_url=ok,
                                           cancel_url=back))
        q = self.stripe.requests()[n0:]
        self.assertEqual(len(q), 1, q)
        self.assertEqual(set(q[0]["form"]), FORM_FIELDS, q[0]["form"])
        self.assertEqual((q[0]["form"]["success_url"], q[0]["form"]["cancel_url"]), (ok, back))
        self.assertEqual(q[0]["form"]["mode"], "payment")
        self.assertEqual(q[0]["form"]["metadata[workforce_org]"], o.id)
        self.assertEqual(cs["credits"], 1000)

    def test_client_idempotency_key(self):
        """A client's Idempotency-Key: its retry is the same session (one Stripe call); after a
        502 (not kept) its retry calls Stripe again and succeeds; Stripe sees one key per
        client key, scoped to the organization."""
        o = self.org("idem")
        h = {"Cookie": o.owner["cookie"], "X-CSRF-Token": o.owner["csrf"]}
        body = {"price_id": "price_small", "success_url": OK_URL, "cancel_url": NO_URL}
        n0 = len(self.stripe.requests())
        r1 = self.server.post("/v1/billing/checkout", body, headers=dict(h, **{
            "Idempotency-Key": "buy-1"}))
        r2 = self.server.post("/v1/billing/checkout", body, headers=dict(h, **{
            "Idempotency-Key": "buy-1"}))
        self.assertEqual(self.assertJson(r1), self.assertJson(r2))
        self.assertEqual(r2.header("Idempotent-Replayed"), "true", r2.headers)
        q = self.stripe.requests()[n0:]
        self.assertEqual(len(q), 1, q)
        # Stripe down: 502, not kept; the retry with the same key reaches Stripe and succeeds
        try:
            self.stripe.fail(1000, 500)
            r3 = self.server.post("/v1/billing/checkout", body, headers=dict(h, **{
                "Idempotency-Key": "buy-2"}))
            self.assertError(r3, 502, "upstream_error", ANY_PARAM)
        finally:
            self.stripe.fail(0)
        r4 = self.server.post("/v1/billing/checkout", body, headers=dict(h, **{
            "Idempotency-Key": "buy-2"}))
        cs = self.assertJson(r4)
        self.assertNotEqual(cs["id"], r1.json["id"])
        keys = [x["headers"].get("idempotency-key") for x in self.stripe.requests()[n0:]]
        self.assertEqual(len(set(keys[1:])), 1, keys)
        self.assertNotEqual(keys[0], keys[-1], keys)
        # another organization's same client key is another Stripe key
        other = self.org("idem-b")
        n1 = len(self.stripe.requests())
        r5 = self.server.post("/v1/billing/checkout", body, headers={
            "Cookie": other.owner["cookie"], "X-CSRF-Token": other.owner["csrf"],
            "Idempotency-Key": "buy-1"})
        self.assertNotEqual(self.assertJson(r5)["id"], r1.json["id"])
        k5 = self.stripe.requests()[n1:][0]["headers"].get("idempotency-key")
        self.assertNotEqual(k5, keys[0])

    def test_stripe_hanging(self):
        """Stripe that does not answer: 502 after the server's own timeout, and the server
        answers everything else meanwhile (the call does not hold a request thread)."""
        o = self.org("hang")
        result = {}
        try:
            self.stripe.fail(1, 500, delay_ms=45000)

            def slow():
                result["r"] = self.server.request(
                    "POST", "/v1/billing/checkout", timeout=90, headers={
                        "Cookie": o.owner["cookie"], "X-CSRF-Token": o.owner["csrf"]},
                    json_body={"price_id": "price_small", "success_url": OK_URL,
                               "cancel_url": NO_URL})
            t0 = time.time()
            th = threading.Thread(target=slow)
            th.start()
            self.poll(lambda: len([q for q in self.stripe.requests()
                                   if q["form"] and q["form"].get("client_reference_id") == o.id]),
                      "the checkout reached Stripe", timeout=30)
            for _ in range(20):
                t1 = time.time()
                self.assertJson(self.server.get("/v1/billing/packs", key=o.live))
                self.assertLess(time.time() - t1, 5)
            th.join(80)
            self.assertFalse(th.is_alive())
            self.assertError(result["r"], 502, "upstream_error", ANY_PARAM)
            self.assertLess(time.time() - t0, 45, "no timeout of its own")
        finally:
            self.stripe.fail(0)

    def test_stripe_failing(self):
        o = self.org("fail")
        try:
            for status in (500, 503, 429):
                with self.subTest(status=status):
                    n0 = len(self.stripe.requests())
                    self.stripe.fail(1000, status)
                    r = self.checkout(o.owner, "price_small")
                    self.assertError(r, 502, "upstream_error", ANY_PARAM)
                    self.stripe.fail(0)
                    tried = self.stripe.requests()[n0:]
                    self.assertGreaterEqual(len(tried), 1)
                    # retries (if any) reuse the request's Idempotency-Key, as Stripe asks
                    self.assertEqual(len({t["headers"].get("idempotency-key") for t in tried}),
                                     1, tried)
            # Stripe refuses the request itself: an archived price, a key it does not accept
            self.assertError(self.checkout(o.owner, STALE_PACK[0]), 502, "upstream_error",
                             ANY_PARAM)
            self.stripe.configure(secret_keys={"live": "sk_live_" + rand(32)})
            r = self.checkout(o.owner, "price_small")
            self.assertError(r, 502, "upstream_error", ANY_PARAM)
            # an answer that is not a checkout session
            self.stripe.configure(secret_keys={"live": LIVE_SK})
            self.stripe.fail(1000, 200, body={"object": "checkout.session"})
            self.assertError(self.checkout(o.owner, "price_small"), 502, "upstream_error",
                             ANY_PARAM)
        finally:
            self.stripe.fail(0)
            self.stripe.configure(secret_keys={"live": LIVE_SK})
        # Stripe back: the checkout works again
        self.checkout_ok(o.owner, "price_small")
        self.assertEqual(self.ledger(o.live), [])


class NotConfiguredTest(BillingCase):
    """Live mode has packs but no secret key; test mode a secret key but no packs."""

    stripe_env = {"WORKFORCE_CREDIT_PACKS": "price_small:1000",
                  "WORKFORCE_STRIPE_TEST_SECRET_KEY": TEST_SK}
    standin_config = STANDIN

    def test_not_configured(self):
        o = self.org("nc")
        billing = self.server.create_key(o.slug, mode="test", scopes="billing")
        for who, s, mode in (("live owner", o.owner, None), ("test owner", o.owner, "test"),
                             ("test key", billing, None)):
            with self.subTest(who=who):
                r = self.checkout(s, "price_small", mode=mode)
                self.assertError(r, 400, "integration_not_configured", ANY_PARAM)
        body = self.assertJson(self.server.get("/v1/billing/packs", key=o.test))
        self.assertEqual(body, {"packs": []})
        self.assertEqual(self.stripe.requests(), [])


class EventsTest(BillingCase):
    stripe_env = LIVE_ENV
    standin_config = STANDIN

    def test_purchase_through_the_pay_page(self):
        o = self.org("buy", credits=25)
        cs = self.checkout_ok(o.owner, "price_small")
        r = self.stripe.pay(cs["id"])
        self.assertEqual(r.status, 303, r)
        self.assertEqual(r.header("Location"), OK_URL.replace("{CHECKOUT_SESSION_ID}", cs["id"]))
        d = self.delivery_of(r.header("X-Event-Id"))
        self.assertEqual((d["status"], json.loads(d["body"])), (200, RECEIVED), d)
        self.assertEqual(self.balance(o.live), 1025)
        self.assertEqual(self.balance(o.test), 0)
        tx = self.ledger(o.live)
        self.checkTx(tx[0], "purchase", 1000,
                     reference={"type": "checkout_session", "id": cs["id"]})
        self.assertEqual((tx[0]["balance_after"], tx[0]["shortfall"], tx[0]["employee_id"]),
                         (1025, 0, None))
        self.checkTx(tx[1], "grant", 25)
        self.assertEqual(len(tx), 2, tx)
        # account.credits_added, whose object is the transaction
        def added():
            body = self.assertJson(self.server.get("/v1/events?type=account.credits_added",
                                                   key=o.live))
            return [e for e in body["events"] if e["data"]["object"].get("id") == tx[0]["id"]]
        ev = self.poll(added, "account.credits_added of the purchase", timeout=30)[0]
        self.assertEqual(ev["data"]["object"]["amount"], 1000)
        # the same session paid again (its event sent twice by a retrying Stripe): once
        self.stripe.deliver(r.header("X-Event-Id"))
        self.assertEqual(self.balance(o.live), 1025)
        # the audit log: Stripe did it, named by its event
        log = self.assertJson(self.call(o.owner, "GET", "/v1/audit_events?limit=100"))
        got = [e for e in log["audit_events"] if e["action"] == "credits.purchase"]
        self.assertEqual(len(got), 1, log)
        self.assertEqual((got[0]["actor"]["type"], got[0]["actor"]["id"]),
                         ("stripe", r.header("X-Event-Id")), got[0])
        self.assertEqual(got[0]["target"]["id"], cs["id"], got[0])

    def test_signatures(self):
        o = self.org("sig")
        cs = self.checkout_ok(o.owner, "price_small")
        ev = event("checkout.session.completed",
                   checkout_session(cs["id"], o.id, True, amount_total=999), True)
        data = raw(ev)
        now = int(time.time())
        tampered = data.replace(b'"amount_total": 999', b'"amount_total": 99900')
        self.assertNotEqual(tampered, data)
        bad = [
            ("no header", dict(header=False)),
            ("empty header", dict(header="")),
            ("garbage", dict(header="garbage")),
            ("t only", dict(header="t=%d" % now)),
            ("v1 only", dict(header="v1=" + "0" * 64)),
            ("removed secret", dict(secret=WH_GONE)),
            ("v0 of a good secret only", dict(header=self.stripe.sign(data, WH_LIVE).replace(
                "v1=", "v0="))),
            ("another body", dict(body=tampered, header=self.stripe.sign(data, WH_LIVE))),
            ("stale", dict(t=now - 400)),
            ("stale by a second", dict(t=now - 302)),
            ("from the future", dict(t=now + 400)),
        ]
        for what, kw in bad:
            with self.subTest(what=what):
                r = self.post_event(ev, **kw)
                self.assertError(r, 401, "invalid_signature", ANY_PARAM)
        self.assertEqual(self.balance(o.live), 0, "an unverified event was applied")
        # a few minutes old is fine, once
        self.post_event_ok(ev, t=now - 240)
        self.assertEqual(self.balance(o.live), 1000)
        self.post_event_ok(ev)
        self.assertEqual(self.balance(o.live), 1000)

    def test_rotated_secrets(self):
        """The second secret of the comma list verifies; so does a header with several v1 (as
        Stripe sends while a secret rolls) of which one matches; a removed one does not."""
        o = self.org("rot")
        a = self.checkout_ok(o.owner, "price_small")
        b = self.checkout_ok(o.owner, "price_small")
        c = self.checkout_ok(o.owner, "price_small")
        ev_a = event("checkout.session.completed", checkout_session(a["id"], o.id, True), True)
        ev_b = event("checkout.session.completed", checkout_session(b["id"], o.id, True), True)
        ev_c = event("checkout.session.completed", checkout_session(c["id"], o.id, True), True)
        self.assertError(self.post_event(ev_a, secret=WH_GONE), 401, "invalid_signature",
                         ANY_PARAM)
        self.post_event_ok(ev_a, secret=WH_LIVE_OLD)
        self.assertEqual(self.balance(o.live), 1000)
        self.post_event_ok(ev_b, secret=[WH_GONE, WH_LIVE])
        self.assertEqual(self.balance(o.live), 2000)
        self.assertError(self.post_event(ev_c, secret=[WH_GONE, "whsec_" + rand(32)]), 401,
                         "invalid_signature", ANY_PARAM)
        self.assertEqual(self.balance(o.live), 2000)
        # a scheme other than v1 beside a good v1 (Stripe adds v0 in test mode): verified
        data = raw(ev_c)
        self.post_event(ev_c, header=self.stripe.sign(data, WH_LIVE) + ",v0=" + "ab" * 32)
        self.assertEqual(self.balance(o.live), 3000)

    def test_replays(self):
        o = self.org("rep")
        cs = self.buy(o)
        evid = [e for e in self.stripe.events() if e["data"]["object"]["id"] == cs["id"]][0]["id"]
        for _ in range(3):
            d = self.stripe.deliver(evid)["delivery"]
            self.assertEqual((d["status"], json.loads(d["body"])), (200, RECEIVED), d)
        self.assertEqual(self.balance(o.live), 1000)
        # another event id for the same session: still once per session
        again = event("checkout.session.completed",
                      checkout_session(cs["id"], o.id, True, payment_intent=self.pi_of(cs["id"])),
                      True)
        self.post_event_ok(again)
        self.assertEqual(self.balance(o.live), 1000)
        # a refund event replayed: taken back once
        ref = self.stripe.refund(cs["id"], 333)
        self.assertEqual(ref["delivery"]["status"], 200, ref)
        self.assertEqual(self.balance(o.live), 667)
        self.stripe.deliver(ref["event"]["id"])
        self.post_event_ok(ref["event"])
        self.assertEqual(self.balance(o.live), 667)
        self.assertEqual([t["reason"] for t in self.ledger(o.live)], ["refund", "purchase"])

    def test_refund_before_its_purchase(self):
        o = self.org("ooo")
        cs = self.checkout_ok(o.owner, "price_small")
        r = self.stripe.pay(cs["id"], deliver=False)  # Stripe's delivery of it comes late
        self.assertEqual(r.status, 303, r)
        held = r.header("X-Event-Id")
        ref = self.stripe.refund(cs["id"], 333)
        self.assertEqual((ref["delivery"]["status"], json.loads(ref["delivery"]["body"])),
                         (200, RECEIVED), ref)
        self.assertEqual(self.balance(o.live), 0)
        self.assertEqual(self.ledger(o.live), [], "a refund of nothing yet was applied")
        d = self.stripe.deliver(held)["delivery"]
        self.assertEqual(d["status"], 200, d)
        self.assertEqual(self.balance(o.live), 667)
        tx = self.ledger(o.live)
        self.assertEqual([t["reason"] for t in tx], ["refund", "purchase"], tx)
        self.checkTx(tx[0], "refund", -333,
                     reference={"type": "charge", "id": ref["event"]["data"]["object"]["id"]})
        self.assertEqual(tx[0]["balance_after"], 667)
        # the held refund applies once: the purchase again changes nothing
        self.stripe.deliver(held)
        self.assertEqual(self.balance(o.live), 667)
        # a dispute before its purchase: held, then it takes back all of it
        cs2 = self.checkout_ok(o.owner, "price_small")
        held2 = self.stripe.pay(cs2["id"], deliver=False).header("X-Event-Id")
        dp = self.stripe.dispute(cs2["id"])
        self.assertEqual(dp["delivery"]["status"], 200, dp)
        self.assertEqual(self.balance(o.live), 667)
        self.stripe.deliver(held2)
        self.assertEqual(self.balance(o.live), 667)
        tx = self.ledger(o.live)
        self.assertEqual([(t["reason"], t["amount"]) for t in tx[:2]],
                         [("dispute", -1000), ("purchase", 1000)], tx)

    def test_events_that_change_nothing(self):
        o = self.org("nil")
        other = self.org("nil-b")
        cs = self.checkout_ok(o.owner, "price_small")
        tcs = self.checkout_ok(o.owner, "price_tsmall", mode="test")
        cases = [
            ("live session, test event", event("checkout.session.completed",
                                              checkout_session(cs["id"], o.id, False), False),
             WH_TEST),
            ("live session, test event, live secret",
             event("checkout.session.completed", checkout_session(cs["id"], o.id, False), False),
             WH_LIVE),
            ("test session, live event", event("checkout.session.completed",
                                              checkout_session(tcs["id"], o.id, True), True),
             WH_LIVE),
            ("unknown session", event("checkout.session.completed",
                                      checkout_session("cs_live_" + rand(58), o.id, True), True),
             WH_LIVE),
            ("another organization's reference",
             event("checkout.session.completed", checkout_session(cs["id"], other.id, True),
                   True), WH_LIVE),
            ("not paid", event("checkout.session.completed",
                               checkout_session(cs["id"], o.id, True, payment_status="unpaid"),
                               True), WH_LIVE),
            ("async payment failed", event("checkout.session.async_payment_failed",
                                           checkout_session(cs["id"], o.id, True,
                                                            payment_status="unpaid"), True),
             WH_LIVE),
            ("expired", event("checkout.session.expired",
                              dict(checkout_session(cs["id"], o.id, True,
                                                    payment_status="unpaid"), status="expired"),
                              True), WH_LIVE),
            ("another type", event("payment_intent.succeeded",
                                   {"id": "pi_" + rand(24), "object": "payment_intent",
                                    "amount": 999, "livemode": True}, True), WH_LIVE),
            ("refund of an unknown payment", event(
                "charge.refunded", charge("pi_" + rand(24), 999, 999, True), True), WH_LIVE),
            ("dispute of an unknown payment", event(
                "charge.dispute.created", dispute("pi_" + rand(24), "ch_" + rand(24), 999, True),
                True), WH_LIVE),
        ]
        for what, ev, secret in cases:
            with self.subTest(what=what):
                self.post_event_ok(ev, secret)
        for org in (o, other):
            for key in (org.live, org.test):
                self.assertEqual(self.balance(key), 0, org.slug)
                self.assertEqual(self.ledger(key), [])
        # the same sessions, paid for real, are credited: the events above were ignored only
        # for what they said
        self.stripe.pay(cs["id"])
        self.stripe.pay(tcs["id"])
        self.assertEqual((self.balance(o.live), self.balance(o.test)), (1000, 300))
        self.assertEqual(self.balance(other.live), 0)

    def test_delayed_payment(self):
        o = self.org("late")
        cs = self.checkout_ok(o.owner, "price_small")
        r = self.stripe.pay(cs["id"], outcome="delayed")
        self.assertEqual(self.delivery_of(r.header("X-Event-Id"))["status"], 200)
        self.assertEqual(self.balance(o.live), 0, "credited before the payment succeeded")
        ok = self.stripe.async_payment(cs["id"], "succeeded")
        self.assertEqual(ok["delivery"]["status"], 200, ok)
        self.assertEqual(self.balance(o.live), 1000)
        self.stripe.deliver(ok["event"]["id"])
        self.stripe.deliver(r.header("X-Event-Id"))
        self.assertEqual(self.balance(o.live), 1000)
        tx = self.ledger(o.live)
        self.assertEqual(len(tx), 1, tx)
        self.checkTx(tx[0], "purchase", 1000, reference={"type": "checkout_session",
                                                         "id": cs["id"]})
        # a delayed payment that fails: nothing
        cs2 = self.checkout_ok(o.owner, "price_small")
        self.stripe.pay(cs2["id"], outcome="delayed")
        failed = self.stripe.async_payment(cs2["id"], "failed")
        self.assertEqual(failed["delivery"]["status"], 200, failed)
        self.assertEqual(self.balance(o.live), 1000)

    def test_concurrent_deliveries(self):
        """The same event delivered 8 times at once (Stripe retries while a delivery is slow),
        and two purchases of one organization at once: each credited once."""
        o = self.org("conc")
        a = self.checkout_ok(o.owner, "price_small")
        b = self.checkout_ok(o.owner, "price_big")
        ev = event("checkout.session.completed", checkout_session(a["id"], o.id, True), True)
        data = raw(ev)
        header = self.stripe.sign(data, WH_LIVE)
        ev_b = event("checkout.session.completed", checkout_session(b["id"], o.id, True), True)
        bodies = [(data, header)] * 8 + [(raw(ev_b), self.stripe.sign(raw(ev_b), WH_LIVE))]
        results = [None] * len(bodies)

        def send(i):
            d, h = bodies[i]
            results[i] = self.server.request("POST", EVENTS_PATH, body=d,
                                             headers={"Stripe-Signature": h},
                                             content_type="application/json")
        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for r in results:
            self.assertIsNotNone(r)
            self.assertEqual((r.status, r.json), (200, RECEIVED), r)
        self.assertEqual(self.balance(o.live), 6000)
        self.assertEqual(sorted(t["amount"] for t in self.ledger(o.live)), [1000, 5000])

    def test_refunds_out_of_order(self):
        """Stripe's amount_refunded is cumulative: a refund event that arrives after a later one
        (a smaller cumulative amount) takes nothing more."""
        o = self.org("rooo")
        cs = self.buy(o)
        first = self.stripe.refund(cs["id"], 333, deliver=False)["event"]
        second = self.stripe.refund(cs["id"], 500)
        self.assertEqual(second["delivery"]["status"], 200, second)
        self.assertEqual(self.balance(o.live), 500)
        d = self.stripe.deliver(first["id"])["delivery"]
        self.assertEqual(d["status"], 200, d)
        self.assertEqual(self.balance(o.live), 500)

    def test_take_backs_of_another_mode_or_too_much(self):
        """A test-mode refund or dispute naming a live purchase's payment takes nothing; a
        refund event claiming more than was paid takes back at most the purchase."""
        o = self.org("odd", credits=5000)
        cs = self.buy(o)
        pi = self.pi_of(cs["id"])
        ch = "ch_" + rand(24)
        self.post_event_ok(event("charge.refunded", charge(pi, 999, 999, False, ch), False),
                           WH_TEST)
        self.post_event_ok(event("charge.dispute.created", dispute(pi, ch, 999, False), False),
                           WH_TEST)
        self.assertEqual(self.balance(o.live), 6000)
        self.assertEqual(self.balance(o.test), 0)
        # refused as invalid (400) or capped at the purchase: never more than 1000 back
        r = self.post_event(event("charge.refunded", charge(pi, 999, 9990, True, ch), True))
        self.assertIn(r.status, (200, 400), r)
        self.assertIn(self.balance(o.live), (5000, 6000))

    def test_malformed_events(self):
        """Verified but malformed events (Stripe never sends them; a bug or a changed API
        version might): no crash (a division by a zero amount), nothing applied."""
        o = self.org("bad", credits=5000)
        cs = self.buy(o)
        pi = self.pi_of(cs["id"])
        sess = checkout_session(cs["id"], o.id, True, payment_intent=pi)
        evs = [
            event("charge.refunded", charge(pi, 0, 0, True), True),
            event("charge.refunded", charge(pi, 0, 5, True), True),
            event("charge.refunded", charge(pi, 999, -5, True), True),
            event("charge.refunded", charge(pi, -999, 5, True), True),
            event("charge.refunded", dict(charge(pi, 999, 5, True), amount="999"), True),
            event("charge.refunded", dict(charge(pi, 999, 5, True), amount_refunded=2 ** 62),
                  True),
            event("charge.refunded", dict(charge(pi, 999, 5, True), amount=1e300), True),
            event("charge.refunded", dict(charge(pi, 999, 5, True), payment_intent=None), True),
            event("charge.refunded", None, True),
            event("charge.refunded", [], True),
            event("checkout.session.completed", dict(sess, id=None), True),
            event("checkout.session.completed", dict(sess, client_reference_id=None), True),
            event("checkout.session.completed", "cs", True),
            dict(event("checkout.session.completed", sess, True), type=None),
            dict(event("checkout.session.completed", sess, True), livemode="true"),
            dict(event("checkout.session.completed", sess, True), id=None),
            dict(event("checkout.session.completed", sess, True), data=None),
        ]
        for i, ev in enumerate(evs):
            with self.subTest(i=i, ev=json.dumps(ev)[:160]):
                r = self.post_event(ev)
                self.assertIn(r.status, (200, 400), r)
                self.assertTrue(self.server.alive(), self.server.log_tail())
        for body in (b"", b"{", b"[]", b"null", b'{"id": "evt_x"}'):
            with self.subTest(body=body):
                r = self.post_event(None, body=body)
                self.assertIn(r.status, (200, 400), r)
        self.assertEqual(self.balance(o.live), 6000)

    def test_partial_refunds(self):
        """floor(credits * amount_refunded / amount) minus what was given back already, with
        Stripe's cumulative amount_refunded: 999 cents bought 1000 credits."""
        o = self.org("part")
        cs = self.buy(o)
        self.assertEqual(self.balance(o.live), 1000)
        want = [(333, -333, 667), (500, -167, 500), (999, -500, 0)]
        ch = None
        for cumulative, amount, bal in want:
            with self.subTest(amount_refunded=cumulative):
                ref = self.stripe.refund(cs["id"], cumulative)
                ch = ref["event"]["data"]["object"]["id"]
                self.assertEqual(ref["delivery"]["status"], 200, ref)
                self.assertEqual(self.balance(o.live), bal)
                tx = self.ledger(o.live, reason="refund")[0]
                self.checkTx(tx, "refund", amount, reference={"type": "charge", "id": ch})
                self.assertEqual((tx["balance_after"], tx["shortfall"]), (bal, 0))
        self.assertEqual(len(self.ledger(o.live, reason="refund")), 3)
        # a dispute after everything came back takes nothing more
        self.stripe.dispute(cs["id"])
        self.assertEqual(self.balance(o.live), 0)
        self.assertEqual(sum(t["amount"] for t in self.ledger(o.live, reason="dispute")), 0)

    def test_dispute_takes_back_the_rest(self):
        o = self.org("disp", credits=50)
        cs = self.buy(o)
        self.stripe.refund(cs["id"], 100)  # floor(1000 * 100 / 999) = 100
        self.assertEqual(self.balance(o.live), 950)
        dp = self.stripe.dispute(cs["id"])
        self.assertEqual(dp["delivery"]["status"], 200, dp)
        self.assertEqual(self.balance(o.live), 50)
        tx = self.ledger(o.live)
        self.assertEqual([t["reason"] for t in tx], ["dispute", "refund", "purchase", "grant"])
        self.checkTx(tx[0], "dispute", -900)
        self.assertEqual((tx[0]["balance_after"], tx[0]["shortfall"]), (50, 0))
        # once: the dispute again, and a later refund of the rest, take nothing more
        self.stripe.deliver(dp["event"]["id"])
        self.stripe.refund(cs["id"], 999)
        self.assertEqual(self.balance(o.live), 50)

    def test_take_back_beyond_the_balance(self):
        o = self.org("short")
        cs = self.buy(o)
        p = self.server.orgs_update(o.slug, credits=100)  # 900 spent (an adjustment)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.checkTx(self.ledger(o.live)[0], "adjustment", -900)
        self.stripe.refund(cs["id"])  # all of it
        self.assertEqual(self.balance(o.live), 0)
        tx = self.ledger(o.live)[0]
        self.checkTx(tx, "refund", -100)
        self.assertEqual((tx["balance_after"], tx["shortfall"]), (0, 900))
        # a dispute after that: nothing left to take back, nothing below 0
        self.stripe.dispute(cs["id"])
        self.assertEqual(self.balance(o.live), 0)

    def test_test_mode_purchase(self):
        o = self.org("tm", credits=10)
        cs = self.buy(o, "price_tsmall", mode="test")
        self.assertEqual(cs["mode"], "test")
        ev = [e for e in self.stripe.events() if e["data"]["object"]["id"] == cs["id"]][0]
        self.assertFalse(ev["livemode"])
        self.assertEqual(self.balance(o.test), 300)
        self.assertEqual(self.balance(o.owner, mode="test"), 300)
        self.assertEqual(self.balance(o.live), 10)
        self.assertEqual(self.balance(o.owner), 10)
        ttx = self.ledger(o.test)
        self.assertEqual(len(ttx), 1, ttx)
        self.checkTx(ttx[0], "purchase", 300, mode="test",
                     reference={"type": "checkout_session", "id": cs["id"]})
        self.assertEqual([t["reason"] for t in self.ledger(o.live)], ["grant"])
        self.assertEqual([t["id"] for t in self.ledger(o.owner, mode="test")],
                         [t["id"] for t in ttx])
        # a test refund comes off the test balance
        self.stripe.refund(cs["id"], 150)
        self.assertEqual((self.balance(o.test), self.balance(o.live)), (150, 10))


class RotationAcrossRestartsTest(BillingCase):
    """A secret rolled as an operator does it: the new one added first, the old one removed
    later, a restart each time; what was signed with each is verified while it is listed."""

    stripe_env = dict(LIVE_ENV, WORKFORCE_STRIPE_WEBHOOK_SECRET=WH_LIVE_OLD)
    standin_config = STANDIN

    def restart_with(self, secrets=None, **env):
        """Stop the server and start it again on its port with these settings changed."""
        srv = self.server
        port = srv.port
        self.assertEqual(srv.stop(), 0)
        if secrets is not None:
            env["WORKFORCE_STRIPE_WEBHOOK_SECRET"] = secrets
        srv.extra_env.update(env)
        srv.start(port=port)

    def test_rotation(self):
        o = self.org("roll")
        sessions = [self.checkout_ok(o.owner, "price_small")["id"] for _ in range(4)]
        evs = [event("checkout.session.completed", checkout_session(s, o.id, True), True)
               for s in sessions]
        self.assertError(self.post_event(evs[0], WH_LIVE), 401, "invalid_signature", ANY_PARAM)
        self.post_event_ok(evs[0], WH_LIVE_OLD)
        self.restart_with("%s,%s" % (WH_LIVE, WH_LIVE_OLD))
        self.post_event_ok(evs[1], WH_LIVE)
        self.post_event_ok(evs[2], WH_LIVE_OLD)
        self.restart_with(WH_LIVE)
        self.assertError(self.post_event(evs[3], WH_LIVE_OLD), 401, "invalid_signature",
                         ANY_PARAM)
        self.assertEqual(self.balance(o.live), 3000)
        self.post_event_ok(evs[3], WH_LIVE)
        self.assertEqual(self.balance(o.live), 4000)

    def test_packs_changed_after_a_checkout(self):
        """A purchase adds the credits of the pack as it was at its checkout, even when the
        operator changed or removed the pack before the payment arrived."""
        o = self.org("repack")
        a = self.checkout_ok(o.owner, "price_small")
        b = self.checkout_ok(o.owner, "price_big")
        srv = self.server
        before = srv.extra_env["WORKFORCE_CREDIT_PACKS"]
        self.restart_with(WORKFORCE_CREDIT_PACKS="price_small:2000")
        try:
            packs = self.assertJson(srv.get("/v1/billing/packs", key=o.live))["packs"]
            self.assertEqual(packs, [{"price_id": "price_small", "credits": 2000}])
            secret = srv.extra_env["WORKFORCE_STRIPE_WEBHOOK_SECRET"].split(",")[0]
            for cs in (a, b):
                self.post_event_ok(event("checkout.session.completed",
                                         checkout_session(cs["id"], o.id, True), True), secret)
        finally:
            self.restart_with(WORKFORCE_CREDIT_PACKS=before)
        self.assertEqual(sorted(t["amount"] for t in self.ledger(o.live)), [1000, 5000])


class LedgerTest(BillingCase):
    stripe_env = LIVE_ENV
    standin_config = STANDIN

    def next_second(self):
        """Until the clock is in a new second (created_at is in seconds): a clock condition."""
        s = int(time.time())
        while int(time.time()) <= s:
            time.sleep(0.01)
        return int(time.time())

    def test_list_filters_and_pages(self):
        o = self.org("led", credits=40)
        self.buy(o)                                     # +1000
        self.assertEqual(self.server.orgs_update(o.slug, credits=2000).returncode, 0)  # +960
        since = self.next_second()
        self.assertEqual(self.server.orgs_update(o.slug, credits=1500).returncode, 0)  # -500
        emp = self.employee(o.live)
        for i in range(2):
            self.chat_ok(o.live, emp, "How do you plan a busy week, part %d?" % i)
        items = self.ledger(o.live)
        reasons = [t["reason"] for t in items]
        k = 0
        while k < len(reasons) and reasons[k] == "chat":
            k += 1
        self.assertGreaterEqual(k, 2, reasons)
        self.assertEqual(reasons[k:], ["adjustment", "grant", "purchase", "grant"], reasons)
        self.checkTx(items[k], "adjustment", -500)
        self.checkTx(items[k + 1], "grant", 960)
        self.checkTx(items[k + 2], "purchase", 1000)
        self.checkTx(items[k + 3], "grant", 40)
        for t in items:
            self.assertEqual(set(t), TX_FIELDS, t)
            self.assertIn(t["reason"], REASONS)
            self.assertEqual(t["mode"], "live")
        for t in items[:k]:
            self.assertEqual(t["employee_id"], emp, t)
            self.assertLess(t["amount"], 0, t)
        for t in items[k:]:
            self.assertIsNone(t["employee_id"], t)
        self.assertEqual(len({t["id"] for t in items}), len(items))
        times = [parse_ts(t["created_at"]) for t in items]
        self.assertEqual(times, sorted(times, reverse=True))
        # each entry's balance_after follows from the one before it
        run = 0
        for t in reversed(items):
            run += t["amount"]
            self.assertEqual(t["balance_after"], run, t)
        # reason and since filters
        self.assertEqual([t["id"] for t in self.ledger(o.live, reason="grant")],
                         [items[k + 1]["id"], items[k + 3]["id"]])
        self.assertEqual([t["id"] for t in self.ledger(o.live, reason="purchase")],
                         [items[k + 2]["id"]])
        self.assertEqual(self.ledger(o.live, reason="dispute"), [])
        self.assertEqual([t["id"] for t in self.ledger(o.live, since=since)],
                         [t["id"] for t in items[:k + 1]])
        self.assertEqual(self.ledger(o.live, since=int(time.time()) + 3600), [])
        # pages of 2
        seen, before, pages = [], None, 0
        while True:
            q = {"limit": 2}
            if before:
                q["before"] = before
            body = self.ledger_page(o.live, **q)
            pages += 1
            self.assertLessEqual(len(body["credit_transactions"]), 2)
            seen += [t["id"] for t in body["credit_transactions"]]
            if not body["has_more"]:
                break
            before = body["next_cursor"]
        self.assertEqual(seen, [t["id"] for t in items])
        self.assertEqual(pages, (len(items) + 1) // 2)
        # the test mode has its own (empty) ledger
        self.assertEqual(self.ledger(o.test), [])

    def test_bad_parameters(self):
        o = self.org("ledbad")
        for q, param in (("limit=0", "limit"), ("limit=101", "limit"), ("limit=-1", "limit"),
                         ("limit=abc", "limit"), ("limit=1.5", "limit"),
                         ("before=garbage", "before"), ("reason=bogus", "reason"),
                         ("reason=", "reason"), ("since=abc", "since"), ("since=-5", "since"),
                         ("since=1.5", "since"), ("foo=1", "foo")):
            with self.subTest(q=q):
                r = self.server.get("/v1/account/credit_transactions?" + q, key=o.live)
                self.assertError(r, 400, "invalid_request", param)

    def test_who_may_read(self):
        o = self.org("ledwho", credits=5)
        viewer = self.p.member_of(o.owner, "v@%s.test" % o.slug, "viewer")
        self.assertEqual([t["reason"] for t in self.ledger(viewer)], ["grant"])
        billing = self.server.create_key(o.slug, scopes="billing")
        self.assertEqual([t["reason"] for t in self.ledger(billing)], ["grant"])
        chat = self.server.create_key(o.slug, scopes="chat")
        for path in ("/v1/account/credit_transactions", "/v1/account/usage"):
            with self.subTest(path=path):
                self.assertError(self.server.get(path, key=chat), 403, "permission_denied",
                                 ANY_PARAM)
        # another organization's entries are never seen
        other = self.org("ledwho-b", credits=7)
        self.assertEqual([t["amount"] for t in self.ledger(other.live)], [7])
        self.assertEqual([t["amount"] for t in self.ledger(o.live)], [5])

    @sqlite_only("the balance is changed behind the server's back in its SQLite file")
    def test_credits_check_finds_a_difference(self):
        """`workforce credits check` (run after every test) is not always 0: a balance changed
        without its entry is named, exit 1."""
        o = self.org("chk", credits=30)
        self.assertEqual(self.server.cli("credits", "check").returncode, 0)
        db = sqlite3.connect(self.server.db, timeout=30)
        try:
            with db:
                db.execute("UPDATE orgs SET credits = credits + 7 WHERE slug = ?", (o.slug,))
            p = self.server.cli("credits", "check")
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn(o.id, p.stdout + p.stderr)
        finally:
            with db:
                db.execute("UPDATE orgs SET credits = credits - 7 WHERE slug = ?", (o.slug,))
            db.close()
        self.assertEqual(self.server.cli("credits", "check").returncode, 0)

    def test_credits_ledger_command(self):
        o = self.org("ledcli", credits=12)
        self.buy(o)
        p = self.server.cli("credits", "ledger", "--org", o.slug)
        self.assertEqual(p.returncode, 0, p.stderr)
        ids = [t["id"] for t in self.ledger(o.live)]
        lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
        found = [i for i in ids if any(i in ln for ln in lines)]
        self.assertEqual(found, ids, p.stdout)
        order = [min(j for j, ln in enumerate(lines) if i in ln) for i in ids]
        self.assertEqual(order, sorted(order), "not newest first:\n" + p.stdout)
        for s in SECRETS:
            self.assertNotIn(s, p.stdout + p.stderr)
        p = self.server.cli("credits", "ledger", "--org", o.slug, "--limit", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(ids[0], p.stdout)
        self.assertNotIn(ids[1], p.stdout)
        self.buy(o, "price_tsmall", mode="test")
        tid = self.ledger(o.test)[0]["id"]
        p = self.server.cli("credits", "ledger", "--org", o.slug, "--mode", "test")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(tid, p.stdout)
        self.assertFalse([i for i in ids if i in p.stdout], p.stdout)
        for args in (["--org", o.slug, "--mode", "prod"], ["--org", o.slug, "--limit", "x"],
                     ["--org", "no-such-org"]):
            with self.subTest(args=args):
                self.assertNotEqual(self.server.cli("credits", "ledger", *args).returncode, 0)


class UsageTest(BillingCase):
    stripe_env = dict(LIVE_ENV, WORKFORCE_CREDITS_LOW="100")
    standin_config = STANDIN

    def usage(self, s, **q):
        path = "/v1/account/usage" + ("?" + urllib.parse.urlencode(q) if q else "")
        body = self.assertJson(self.call(s, "GET", path))
        self.assertEqual(set(body), {"period", "group_by", "from", "to", "items"}, body)
        for it in body["items"]:
            self.assertEqual(set(it), {"key", "credits", "count"}, it)
        return body

    def test_validation_and_defaults(self):
        o = self.org("usev")
        for q, param in (("period=1h", "period"), ("period=", "period"), ("period=30", "period"),
                         ("group_by=week", "group_by"), ("group_by=", "group_by"),
                         ("period=7d&group_by=month", "group_by"), ("foo=1", "foo")):
            with self.subTest(q=q):
                r = self.server.get("/v1/account/usage?" + q, key=o.live)
                self.assertError(r, 400, "invalid_request", param)
        body = self.usage(o.live)
        self.assertEqual((body["period"], body["group_by"], body["items"]), ("30d", "day", []))
        for period, secs in (("24h", 86400), ("7d", 7 * 86400), ("30d", 30 * 86400),
                             ("90d", 90 * 86400)):
            with self.subTest(period=period):
                b = self.usage(o.live, period=period, group_by="employee")
                self.assertEqual((b["period"], b["group_by"]), (period, "employee"))
                self.assertRegex(b["from"], TS_RE)
                self.assertRegex(b["to"], TS_RE)
                to, frm = parse_ts(b["to"]), parse_ts(b["from"])
                self.assertLessEqual(abs(to - time.time()), 120, b)
                self.assertGreaterEqual(to - frm, secs, b)
                self.assertLessEqual(to - frm, secs + 86400, b)

    def test_by_day_and_by_employee(self):
        o = self.org("use", credits=1000)
        self.buy(o)  # purchases are not usage
        e1 = self.employee(o.live, "starter", 0)
        e2 = self.employee(o.live, "starter", 1)
        spent = {e1: 0, e2: 0}
        n = {e1: 0, e2: 0}
        for emp, msg in ((e1, "Plan my week."), (e1, "And the week after that, in detail?"),
                         (e1, "Thanks, one more thing."), (e2, "Hello there.")):
            m = self.chat_ok(o.live, emp, msg)
            self.assertGreaterEqual(m["credits_used"], 1)
            spent[emp] += m["credits_used"]
            n[emp] += 1
        # test mode is free: not usage
        self.chat_ok(o.test, self.employee(o.test, "starter", 0), "Free?")
        chats = self.ledger(o.live, reason="chat")
        self.assertEqual(-sum(t["amount"] for t in chats), spent[e1] + spent[e2])
        by_emp = {}
        for t in chats:
            by_emp[t["employee_id"]] = by_emp.get(t["employee_id"], 0) - t["amount"]
        self.assertEqual(by_emp, spent)

        body = self.usage(o.live, group_by="employee")
        want = sorted([{"key": e, "credits": spent[e], "count": n[e]} for e in (e1, e2)],
                      key=lambda x: -x["credits"])
        self.assertEqual(body["items"], want, body)
        body = self.usage(o.live, period="24h", group_by="day")
        today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        self.assertEqual(body["items"], [{"key": today, "credits": spent[e1] + spent[e2],
                                          "count": 4}], body)
        self.assertEqual(self.usage(o.live)["items"], body["items"])
        # the test mode's usage is its own (free, so none)
        self.assertEqual(self.usage(o.test, group_by="employee")["items"], [])
        # another organization sees none of it
        other = self.org("use-b")
        self.assertEqual(self.usage(other.live)["items"], [])

    def test_credits_low_event(self):
        o = self.org("low", credits=101)
        emp = self.employee(o.live)
        for i in range(3):
            if self.balance(o.live) < 100:
                break
            self.chat_ok(o.live, emp, "Spend a little, %d." % i)
        self.assertLess(self.balance(o.live), 100)

        def low():
            body = self.assertJson(self.server.get("/v1/events?type=account.credits_low",
                                                   key=o.live))
            return body["events"]
        evs = self.poll(low, "account.credits_low", timeout=30)
        obj = evs[0]["data"]["object"]
        self.assertEqual(obj["object"], "credit_transaction", obj)
        self.assertLess(obj["balance_after"], 100, obj)
        self.assertGreaterEqual(obj["balance_after"] - obj["amount"], 100, obj)
        self.assertIn(obj, self.ledger(o.live))
        # once when it falls below, not again while it stays below
        for i in range(2):
            self.chat_ok(o.live, emp, "Below the mark, %d." % i)
        self.assertEqual(len(low()), 1, low())

    def test_credits_added_for_a_grant(self):
        o = self.org("grant")
        self.assertEqual(self.server.orgs_update(o.slug, credits=50).returncode, 0)
        self.assertEqual(self.server.orgs_update(o.slug, credits=20).returncode, 0)
        grant = self.ledger(o.live, reason="grant")
        self.assertEqual([t["amount"] for t in grant], [50])

        def added():
            return self.assertJson(self.server.get("/v1/events?type=account.credits_added",
                                                   key=o.live))["events"]
        evs = self.poll(added, "account.credits_added of the grant", timeout=30)
        self.assertEqual([e["data"]["object"]["id"] for e in evs], [grant[0]["id"]])
        # an adjustment adds nothing, and 20 is not below the mark from 50: no credits_low
        body = self.assertJson(self.server.get("/v1/events?type=account.credits_low",
                                               key=o.live))
        self.assertEqual(body["events"], [])


@unittest.skipIf(standin_missing(), standin_missing() or "")
class StandInPeerTest(unittest.TestCase):
    """The stand-in itself against Stripe's official node library (tests/stripe/sdk_check.mjs):
    the library's requests are parsed, its error classes come out of the stand-in's errors, and
    its webhook verifier accepts what the stand-in delivers and signs (a stale one it refuses).
    No Workforce server."""

    def test_official_library_against_the_stand_in(self):
        cfg = {"live_key": LIVE_SK, "test_key": TEST_SK, "live_price": "price_small",
               "test_price": "price_tsmall", "live_whsec": WH_LIVE, "test_whsec": WH_TEST}
        with StripeStandIn(STANDIN).start() as stripe:
            p = subprocess.run(["node", os.path.join(REPO_ROOT, "tests", "stripe", "sdk_check.mjs"),
                                "--url", stripe.url, "--config", json.dumps(cfg)],
                               capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                               stdin=subprocess.DEVNULL)
            tail = stripe.log_tail()
        lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]
        self.assertEqual(lines[-1:], [{"done": True}], "%s\n%s\n%s" % (p.stdout, p.stderr, tail))
        checks = lines[:-1]
        self.assertGreaterEqual(len(checks), 9, checks)
        for c in checks:
            with self.subTest(check=c["check"]):
                self.assertTrue(c["ok"], c.get("detail"))
        self.assertEqual(p.returncode, 0, p.stderr)
