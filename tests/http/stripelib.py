# SPDX-License-Identifier: MIT
"""The Stripe stand-in for black-box tests of credit purchases (issue 29, contract §21).

StripeStandIn runs tests/stripe/stripe_api.mjs (node; the `stripe` npm package from
node_modules signs its webhooks) on a free 127.0.0.1 port, and stops it by its own PID. The
header of tests/stripe/stripe_api.mjs documents what it answers and its control routes.

    with StripeStandIn({"secret_keys": {"live": "sk_live_..."}, ...}).start() as stripe:
        env["WORKFORCE_STRIPE_API_URL"] = stripe.url
        ...
        stripe.configure(events_url=server.base_url + EVENTS_PATH)
        loc = stripe.pay(session_id)        # the customer pays: the event is delivered
        header = stripe.sign(raw, "whsec_...", t)   # a Stripe-Signature for a test's own event

Signatures are made only by the stand-in (`/__sign`, the package's
generateTestHeaderString): no test computes the HMAC itself.

Event builders (checkout_session, charge, dispute, event) make the objects the way Stripe
sends them, for events a test posts itself (replays, wrong modes, other organizations).
"""

import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse

from harness import REPO_ROOT

SCRIPT = os.path.join(REPO_ROOT, "tests", "stripe", "stripe_api.mjs")
EVENTS_PATH = "/v1/billing/stripe/events"
API_VERSION = "2026-11-18.endive"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def rand(n):
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def standin_missing():
    """Why StripeStandIn cannot run here (a skip reason), or None when it can."""
    if not os.path.exists(os.path.join(REPO_ROOT, "node_modules", "stripe", "package.json")):
        return "node_modules/stripe is not installed (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


class StandInResponse:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError):
            self.json = None

    def header(self, name, default=None):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return default

    def __repr__(self):
        return "<StandIn %s %r>" % (self.status, self.body[:400])


class StripeStandIn:
    """One stripe_api.mjs process with its own temp dir (config.json, stdout, standin.log)."""

    def __init__(self, config=None):
        self.config = dict(config or {})
        self.proc = None
        self.tmpdir = None
        self.port = None

    # -- lifecycle --

    def start(self, timeout=30.0):
        """Write the config, spawn node, wait (at most 'timeout' s) for its {"port": N} line."""
        reason = standin_missing()
        if reason:
            raise RuntimeError(reason)
        self.tmpdir = tempfile.mkdtemp(prefix="workforce-stripe-")
        cfg_path = os.path.join(self.tmpdir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(dict(self.config, port=0), f)
        out_path = os.path.join(self.tmpdir, "stdout")
        with open(out_path, "wb") as out, open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(["node", SCRIPT, "--config", cfg_path],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=log,
                                         cwd=REPO_ROOT)
        deadline = time.time() + timeout
        while True:
            with open(out_path, "rb") as f:
                data = f.read()
            if b"\n" in data:
                self.port = json.loads(data.split(b"\n", 1)[0])["port"]
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("stripe stand-in exited with %s during start:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("stripe stand-in not ready within %.0fs:\n%s"
                                   % (timeout, self.log_tail()))
            time.sleep(0.05)

    def stop(self, timeout=5.0):
        """SIGTERM by PID, SIGKILL after 'timeout' s; the temp dir goes (unless
        WORKFORCE_HTTP_KEEP)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.tmpdir and not os.environ.get("WORKFORCE_HTTP_KEEP"):
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def log_path(self):
        return os.path.join(self.tmpdir, "standin.log")

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except (OSError, TypeError):
            return "(no log)"

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    # -- HTTP --

    def request(self, method, path, body=None, headers=None, timeout=60):
        """One request to the stand-in: 'body' a dict (sent as JSON), str/bytes (as is)."""
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return StandInResponse(resp.status, resp.getheaders(), resp.read())
        finally:
            conn.close()

    def control(self, path, body=None):
        """A control route; its JSON (an AssertionError-free RuntimeError when not 200)."""
        r = self.request("POST" if body is not None else "GET", path, body)
        if r.status != 200:
            raise RuntimeError("stand-in %s: %r" % (path, r))
        return r.json

    # -- control --

    def configure(self, **fields):
        return self.control("/__config", fields)

    def requests(self, path=None):
        """Every /v1/ request the stand-in received (oldest first), of 'path' when given."""
        reqs = self.control("/__requests")["requests"]
        if path is not None:
            reqs = [r for r in reqs if r["path"].split("?")[0] == path]
        return reqs

    def fail(self, count, status=500, body=None, delay_ms=0):
        """The next 'count' requests to /v1/ answer 'status' (0 clears)."""
        b = {"count": count, "status": status, "delay_ms": delay_ms}
        if body is not None:
            b["body"] = body
        return self.control("/__fail", b)

    def sign(self, payload, secret, t=None):
        """The Stripe-Signature header of 'payload' (bytes or str, the raw body) with 'secret'
        (one, or a list: one v1 each) at unix time 't' (default now), made by the stand-in
        with stripe.webhooks.generateTestHeaderString."""
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8")
        b = {"payload": payload, "secret": secret}
        if t is not None:
            b["timestamp"] = int(t)
        return self.control("/__sign", b)["header"]

    def events(self):
        return self.control("/__events")["events"]

    def deliveries(self):
        return self.control("/__deliveries")["deliveries"]

    def deliver(self, event_id, timestamp=None, secret=None):
        """Deliver a kept event (again), signed now: {"event", "delivery"}."""
        b = {"event_id": event_id}
        if timestamp is not None:
            b["timestamp"] = int(timestamp)
        if secret is not None:
            b["secret"] = secret
        return self.control("/__deliver", b)

    def pay_page(self, session_id):
        return self.request("GET", "/pay/" + session_id)

    def pay(self, session_id, outcome="paid", deliver=True):
        """The customer presses Pay: the stand-in's answer (303 to success_url, header
        X-Event-Id naming the checkout.session.completed it built and, unless 'deliver' is
        False, delivered)."""
        form = urllib.parse.urlencode({"outcome": outcome, "deliver": "1" if deliver else "0"})
        return self.request("POST", "/pay/" + session_id, form,
                            {"Content-Type": "application/x-www-form-urlencoded"})

    def async_payment(self, session_id, outcome="succeeded", deliver=True):
        return self.control("/__async", {"session_id": session_id, "outcome": outcome,
                                         "deliver": deliver})

    def refund(self, session_id, amount_refunded=None, deliver=True):
        """charge.refunded of the session's charge; 'amount_refunded' is cumulative."""
        b = {"session_id": session_id, "deliver": deliver}
        if amount_refunded is not None:
            b["amount_refunded"] = amount_refunded
        return self.control("/__refund", b)

    def dispute(self, session_id, deliver=True):
        return self.control("/__dispute", {"session_id": session_id, "deliver": deliver})


# ---- event builders (what Stripe sends) ----

def event(type_, obj, livemode, event_id=None, created=None):
    """A Stripe Event wrapping 'obj'."""
    return {"id": event_id or "evt_" + rand(24), "object": "event", "api_version": API_VERSION,
            "created": int(created or time.time()), "data": {"object": obj},
            "livemode": bool(livemode), "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None}, "type": type_}


def checkout_session(session_id, org_id, livemode, payment_status="paid", payment_intent=None,
                     amount_total=1000, currency="usd", metadata=None, client_reference_id=None):
    """A completed checkout.session (data.object of checkout.session.completed)."""
    mode = "live" if livemode else "test"
    return {
        "id": session_id, "object": "checkout.session", "amount_subtotal": amount_total,
        "amount_total": amount_total,
        "client_reference_id": org_id if client_reference_id is None else client_reference_id,
        "created": int(time.time()) - 60, "currency": currency, "customer": None,
        "customer_details": {"email": "customer@example.com", "name": None},
        "expires_at": int(time.time()) + 86400 - 60, "livemode": bool(livemode),
        "metadata": metadata if metadata is not None else {"workforce_org": org_id,
                                                           "workforce_mode": mode},
        "mode": "payment", "payment_intent": payment_intent or "pi_" + rand(24),
        "payment_status": payment_status, "status": "complete", "success_url":
        "https://example.com/ok", "cancel_url": "https://example.com/no", "url": None,
    }


def charge(payment_intent, amount, amount_refunded, livemode, charge_id=None):
    """A Charge (data.object of charge.refunded); amount_refunded is cumulative."""
    return {"id": charge_id or "ch_" + rand(24), "object": "charge", "amount": amount,
            "amount_captured": amount, "amount_refunded": amount_refunded, "captured": True,
            "created": int(time.time()), "currency": "usd", "livemode": bool(livemode),
            "metadata": {}, "paid": True, "payment_intent": payment_intent,
            "refunded": amount_refunded == amount, "status": "succeeded"}


def dispute(payment_intent, charge_id, amount, livemode):
    """A Dispute (data.object of charge.dispute.created)."""
    return {"id": "dp_" + rand(24), "object": "dispute", "amount": amount, "charge": charge_id,
            "created": int(time.time()), "currency": "usd", "livemode": bool(livemode),
            "metadata": {}, "payment_intent": payment_intent, "reason": "fraudulent",
            "status": "needs_response"}


def raw(ev):
    """The body Stripe sends: the event as pretty-printed JSON, as bytes."""
    return json.dumps(ev, indent=2).encode("utf-8")
