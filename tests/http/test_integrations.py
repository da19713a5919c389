# SPDX-License-Identifier: MIT
"""Integrations (issue 11, contract §13), against a real authorization server: oidc-provider
9.13.3 (tests/oauth/authz_server.mjs, interactions approved at once) stands in for Slack's and
Google's OAuth servers. The list of the five providers; connect and its bad input; the whole
authorization code flow with PKCE through the callback; replayed, forged, expired and foreign
states; the user refusing; a wrong client secret and a token endpoint answering HTML, 500,
garbage or nothing; disconnect revoking the tokens at the provider; tokens never in a response,
a log line or the database file; isolation between organizations and modes; the scope.

Issue 26 finding 6: a redirect_uri only to the allowed origins (WORKFORCE_OAUTH_REDIRECT_ORIGINS),
without a user name, its Location percent-encoded; the flow bound to the browser that started
it (this server's start page and its cookie), so that a link sent to someone else connects
nothing."""

import http.cookiejar
import json
import os
import re
import sqlite3
import sys
import time
import unittest
import urllib.parse
import uuid

from harness import GENEROUS_LIMITS, Server, ServerTestCase, TS_RE, free_port, parse_ts, sqlite_only
from oauthlib import (AuthzServer, authz_missing, cookie_header, follow_authorization,
                      query_params)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mock"))
import provider_mock  # noqa: E402

PROVIDERS = ["slack", "google_calendar", "outlook", "github", "hubspot"]
FIELDS = {"provider", "name", "category", "status", "configured", "account", "scopes",
          "connected_at", "expires_at", "error", "events_url", "operations"}
SLACK_SCOPES = ["chat:write", "channels:history"]  # the default ones
GOOGLE_SCOPE = "https://www.googleapis.com/auth/calendar.events"
BACK = "https://app.example.com/settings/integrations?tab=1"


class IntegrationsHelpers:
    """The servers of a class (an authorization server, the provider mock, Workforce) and what
    the tests of a connection do with them."""

    @classmethod
    def start_servers(cls, extra_env):
        port = free_port()
        cls.base = "http://127.0.0.1:%d" % port
        cls.authz = AuthzServer()
        clients = [{"client_id": "wf-" + p, "client_secret": "secret-" + p,
                    "redirect_uris": ["%s/v1/integrations/%s/callback" % (cls.base, p)]}
                   for p in ("slack", "google_calendar")]
        # Slack joins scopes with commas; oidc-provider splits at spaces, so the joined form is
        # one scope to it.
        # Access tokens of 40 seconds: within a minute of their end, so a step refreshes first.
        cls.authz.start(clients, SLACK_SCOPES + [",".join(SLACK_SCOPES), GOOGLE_SCOPE],
                        access_ttl=40)
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_PUBLIC_URL": cls.base}
        env.update(extra_env)
        for p, secret in (("SLACK", "secret-slack"), ("GOOGLE_CALENDAR", "wrong-secret")):
            low = p.lower()
            env.update({
                "WORKFORCE_OAUTH_%s_CLIENT_ID" % p: "wf-" + low,
                "WORKFORCE_OAUTH_%s_CLIENT_SECRET" % p: secret,
                "WORKFORCE_OAUTH_%s_AUTH_URL" % p: cls.authz.authorization_endpoint,
                "WORKFORCE_OAUTH_%s_TOKEN_URL" % p: cls.authz.token_endpoint,
                "WORKFORCE_OAUTH_%s_REVOKE_URL" % p: cls.authz.revocation_endpoint,
            })
        env["WORKFORCE_OAUTH_GOOGLE_CALENDAR_SCOPES"] = GOOGLE_SCOPE
        # Slack's API (for operations) is the provider mock, which knows none of oidc-provider's
        # tokens: it records which token a step sent, and refuses it.
        cls.mock = provider_mock.ProviderMock().start()
        env["WORKFORCE_OAUTH_SLACK_API_URL"] = cls.mock.base_url + "/slack/api"
        cls.server = Server(env=env)
        try:
            cls.server.start(port=port)
        except BaseException:
            cls.server.cleanup()
            cls.authz.stop()
            cls.mock.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.authz.stop()
            cls.mock.stop()

    def setUp(self):
        self.authz.fail_token_endpoint("off")
        self.authz.set_deny(False)

    # ---- helpers ----

    def key(self, mode="live", scopes=None):
        return self.server.create_key("in-" + uuid.uuid4().hex[:8], mode=mode, scopes=scopes)

    def integrations(self, key):
        b = self.assertJson(self.server.get("/v1/integrations", key=key))
        self.assertEqual(set(b), {"integrations", "has_more", "next_cursor"})
        self.assertFalse(b["has_more"])
        self.assertIsNone(b["next_cursor"])
        self.assertEqual([i["provider"] for i in b["integrations"]], PROVIDERS)
        for i in b["integrations"]:
            self.assertEqual(set(i), FIELDS, i)
        return {i["provider"]: i for i in b["integrations"]}

    def connect(self, key, provider="slack", **body):
        r = self.server.post("/v1/integrations/%s/connect" % provider, body, key=key)
        c = self.assertJson(r)
        self.assertEqual(set(c), {"provider", "status", "authorization_url", "state",
                                  "expires_at"})
        self.assertEqual(c["status"], "pending")
        self.assertRegex(c["state"], r"^[A-Za-z0-9]{40}$")
        return c

    def callback_url(self, provider="slack"):
        return "%s/v1/integrations/%s/callback" % (self.base, provider)

    def authorize(self, c, provider="slack"):
        """The user's browser (a new one: self.jar) opens the authorization_url, this server's
        start page, and approves at the provider: the callback URL it is sent to."""
        self.jar = http.cookiejar.CookieJar()
        return follow_authorization(c["authorization_url"], self.callback_url(provider),
                                    jar=self.jar)

    def callback(self, url, jar=None):
        """The browser (self.jar, or 'jar') arrives at our callback (no API key)."""
        path = url[len(self.base):]
        if jar is None:
            jar = getattr(self, "jar", None) or http.cookiejar.CookieJar()
        cookie = cookie_header(jar, url)
        return self.server.request("GET", path, headers={"Cookie": cookie} if cookie else None)

    def provider_url(self, r):
        """The provider's authorization URL a connect answer 'r' leads to, for the browser that
        called connect (it holds the answer's cookie)."""
        c = self.assertJson(r)
        cookie = r.header("Set-Cookie").split(";")[0]
        start = c["authorization_url"][len(self.base):]
        p = self.server.request("GET", start, headers={"Cookie": cookie})
        self.assertEqual(p.status, 302, p)
        return p.header("Location")

    def connected(self, key, provider="slack"):
        c = self.connect(key, provider, redirect_uri=BACK)
        r = self.callback(self.authorize(c, provider))
        self.assertEqual(r.status, 302, r)
        loc = r.header("Location")
        self.assertTrue(loc.startswith(BACK + "&"), loc)
        self.assertEqual(query_params(loc), {"tab": "1", "provider": provider,
                                             "status": "connected"})
        return self.integrations(key)[provider]

    def jar_of(self, set_cookie):
        """A browser that holds the cookie of the Set-Cookie value 'set_cookie'."""
        import urllib.request

        class Fake:
            def info(self):
                import email.message
                m = email.message.Message()
                m["Set-Cookie"] = set_cookie
                return m
        jar = http.cookiejar.CookieJar()
        jar.extract_cookies(Fake(), urllib.request.Request(self.base + "/v1/integrations/slack/"
                                                            "connect"))
        return jar


@unittest.skipIf(authz_missing(), authz_missing() or "")
class IntegrationsTest(IntegrationsHelpers, ServerTestCase):

    @classmethod
    def setUpClass(cls):
        # BACK's origin: the users are sent back to the application that connects them
        cls.start_servers({"WORKFORCE_OAUTH_REDIRECT_ORIGINS": "https://app.example.com"})

    def test_redirect_origins_listed(self):
        """WORKFORCE_OAUTH_REDIRECT_ORIGINS replaces the default (the public URL's origin)."""
        key = self.key()
        self.assertJson(self.server.post("/v1/integrations/slack/connect",
                                         {"redirect_uri": "https://app.example.com/x"}, key=key))
        for uri in (self.base + "/console/", "https://evil.example/"):
            with self.subTest(redirect_uri=uri):
                self.assertError(self.server.post("/v1/integrations/slack/connect",
                                                  {"redirect_uri": uri}, key=key),
                                 400, "invalid_request", "redirect_uri")

    # ---- the list ----

    def test_list(self):
        key = self.key()
        got = self.integrations(key)
        self.assertEqual(got["slack"]["name"], "Slack")
        self.assertEqual(got["github"]["category"], "code_hosting")
        for p, i in got.items():
            self.assertEqual(i["status"], "available")
            self.assertEqual(i["configured"], p in ("slack", "google_calendar"), p)
            self.assertIsNone(i["account"])
            self.assertEqual(i["scopes"], [])
            self.assertIsNone(i["connected_at"])
            self.assertIsNone(i["expires_at"])
            self.assertIsNone(i["error"])
            self.assertTrue(i["operations"] and all(o.startswith(p + ".")
                                                    for o in i["operations"]), i)
            if p in ("slack", "github"):  # the providers whose events can be verified
                self.assertRegex(i["events_url"], r"^%s/v1/integrations/%s/events/"
                                 r"[A-Za-z0-9]{40}$" % (re.escape(self.base), p))
            else:
                self.assertIsNone(i["events_url"], p)
        # One events token per organization and mode, stable.
        again = self.integrations(key)
        self.assertEqual(again["slack"]["events_url"], got["slack"]["events_url"])
        other = self.integrations(self.key())
        self.assertNotEqual(other["slack"]["events_url"], got["slack"]["events_url"])

    def test_scope_and_auth(self):
        no = self.key(scopes="chat")
        self.assertError(self.server.get("/v1/integrations", key=no), 403, "permission_denied")
        self.assertError(self.server.post("/v1/integrations/slack/connect", {}, key=no), 403,
                         "permission_denied")
        self.assertError(self.server.request("DELETE", "/v1/integrations/slack", key=no), 403,
                         "permission_denied")
        self.assertError(self.server.get("/v1/integrations"), 401, "missing_api_key")
        ok = self.key(scopes="integrations")
        self.integrations(ok)

    # ---- connect: bad input ----

    def test_connect_bad_input(self):
        key = self.key()
        self.assertError(self.server.post("/v1/integrations/dropbox/connect", {}, key=key), 404,
                         "provider_not_found", "provider")
        self.assertError(self.server.post("/v1/integrations/github/connect", {}, key=key), 400,
                         "integration_not_configured", "provider")
        for uri in ("ftp://x.example.com/", "/relative", "example.com/back", "http://",
                    "https://", "https:///path", "https://a.example.com/#frag",
                    "https://a.example.com/a b", "javascript:alert(1)", "", 5, None,
                    "https://" + "a" * 2050):
            with self.subTest(redirect_uri=uri):
                self.assertError(self.server.post("/v1/integrations/slack/connect",
                                                  {"redirect_uri": uri}, key=key),
                                 400, "invalid_request", "redirect_uri")
        for scopes, param in (([], "scopes"), (["a b"], "scopes[0]"), (["ok", ""], "scopes[1]"),
                              (["x", "x"], "scopes[1]"), ("chat:write", "scopes"),
                              (["a,b"], "scopes[0]"), ([7], "scopes[0]")):
            with self.subTest(scopes=scopes):
                self.assertError(self.server.post("/v1/integrations/slack/connect",
                                                  {"scopes": scopes}, key=key),
                                 400, "invalid_request", param)
        self.assertError(self.server.post("/v1/integrations/slack/connect", {"x": 1}, key=key),
                         400, "invalid_request", "x")
        # none of it started anything
        self.assertEqual(self.integrations(key)["slack"]["status"], "available")

    def test_connect_answer(self):
        key = self.key()
        r = self.server.post("/v1/integrations/slack/connect", {"redirect_uri": BACK}, key=key)
        c = self.assertJson(r)
        self.assertRegex(c["expires_at"], TS_RE)
        left = parse_ts(c["expires_at"]) - time.time()
        self.assertTrue(590 <= left <= 601, left)
        # the authorization starts at a page of this server, which leads the browser holding
        # the answer's cookie to the provider
        self.assertEqual(c["authorization_url"], "%s/v1/integrations/slack/authorize?state=%s"
                         % (self.base, c["state"]))
        provider = self.provider_url(r)
        url = urllib.parse.urlsplit(provider)
        self.assertEqual("%s://%s%s" % (url.scheme, url.netloc, url.path),
                         self.authz.authorization_endpoint)
        q = query_params(provider)
        self.assertEqual(q["response_type"], "code")
        self.assertEqual(q["client_id"], "wf-slack")
        self.assertEqual(q["redirect_uri"], self.callback_url())
        self.assertEqual(q["scope"], ",".join(SLACK_SCOPES), "Slack joins scopes by commas")
        self.assertEqual(q["state"], c["state"])
        self.assertEqual(q["code_challenge_method"], "S256")
        self.assertRegex(q["code_challenge"], r"^[A-Za-z0-9_-]{43}$")
        self.assertNotIn("secret-slack", provider)
        self.assertEqual(self.integrations(key)["slack"]["status"], "pending")
        # the caller's scopes, and a new state and challenge each time
        r2 = self.server.post("/v1/integrations/slack/connect", {"scopes": ["chat:write"]},
                              key=key)
        c2 = self.assertJson(r2)
        q2 = query_params(self.provider_url(r2))
        self.assertEqual(q2["scope"], "chat:write")
        self.assertNotEqual(c2["state"], c["state"])
        self.assertNotEqual(q2["code_challenge"], q["code_challenge"])
        # Google is asked for offline access
        g = query_params(self.provider_url(self.server.post(
            "/v1/integrations/google_calendar/connect", {}, key=key)))
        self.assertEqual((g["access_type"], g["prompt"], g["scope"]),
                         ("offline", "consent", GOOGLE_SCOPE))

    # ---- the whole flow ----

    def test_connect_callback_disconnect(self):
        key = self.key()
        before = self.authz.tokens()
        t0 = time.time()
        i = self.connected(key)
        self.assertEqual(i["status"], "connected")
        self.assertIsNone(i["error"])
        self.assertEqual(i["scopes"], SLACK_SCOPES)
        self.assertTrue(t0 - 1 <= parse_ts(i["connected_at"]) <= time.time() + 1, i)
        left = parse_ts(i["expires_at"]) - time.time()
        self.assertTrue(30 <= left <= 41, i)
        now = self.authz.tokens()
        self.assertEqual(now["access_tokens"], before["access_tokens"] + 1)
        self.assertEqual(now["refresh_tokens"], before["refresh_tokens"] + 1)
        values = self.authz.token_values()
        tokens = values["access_tokens"] + values["refresh_tokens"]
        self.assertTrue(tokens)
        # Never in an answer, a log line or the database file.
        for r in (self.server.get("/v1/integrations", key=key),
                  self.server.post("/v1/integrations/slack/connect", {}, key=key)):
            for t in tokens:
                self.assertNotIn(t.encode(), r.body)
        self.assertNoSecret(tokens + ["secret-slack"])

        # Disconnect: available at once, revoked at the provider soon after.
        r = self.server.request("DELETE", "/v1/integrations/slack", key=key)
        d = self.assertJson(r)
        self.assertEqual(set(d), FIELDS)
        self.assertIn(d["status"], ("available", "pending"))  # the connect above is open
        self.assertIsNone(d["connected_at"])
        self.assertEqual(d["scopes"], [])
        self.poll(lambda: self.authz.tokens()["access_tokens"] == before["access_tokens"] and
                  self.authz.tokens()["refresh_tokens"] == before["refresh_tokens"],
                  "the provider revoked the tokens", timeout=15)
        # Idempotent, and for a provider never connected too.
        for p in ("slack", "github"):
            d = self.assertJson(self.server.request("DELETE", "/v1/integrations/" + p, key=key))
            self.assertEqual(d["provider"], p)
            self.assertNotEqual(d["status"], "connected")
        self.assertError(self.server.request("DELETE", "/v1/integrations/dropbox", key=key), 404,
                         "provider_not_found", "provider")

    def test_page_without_redirect_uri(self):
        key = self.key()
        c = self.connect(key)
        r = self.callback(self.authorize(c))
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Content-Type").startswith("text/html"))
        self.assertIn(b"Slack is connected", r.body)
        self.assertEqual(self.integrations(key)["slack"]["status"], "connected")

    # ---- states ----

    def test_states(self):
        key = self.key()
        c = self.connect(key, redirect_uri=BACK)
        url = self.authorize(c)
        code = query_params(url)["code"]
        # forged, missing, and another provider's
        for q, param in (("code=%s&state=%s" % (code, "A" * 40), "state"),
                         ("code=%s" % code, "state"), ("code=%s&state=" % code, "state")):
            with self.subTest(query=q):
                self.assertError(self.server.request(
                    "GET", "/v1/integrations/slack/callback?" + q), 400, "invalid_request",
                    param)
        self.assertError(self.server.request(
            "GET", "/v1/integrations/google_calendar/callback?code=%s&state=%s"
            % (code, c["state"])), 400, "invalid_request", "state")
        self.assertError(self.server.request(
            "GET", "/v1/integrations/dropbox/callback?code=x&state=y"), 404,
            "provider_not_found", "provider")
        # the real one works once (the other provider's attempt did not use it up) ...
        self.assertEqual(self.callback(url).status, 302)
        # ... and a replay finds nothing
        self.assertError(self.callback(url), 400, "invalid_request", "state")
        self.assertEqual(self.integrations(key)["slack"]["status"], "connected")

    @sqlite_only("the test ages a state in the SQLite file")
    def test_expired_state(self):
        key = self.key()
        c = self.connect(key, redirect_uri=BACK)
        url = self.authorize(c)
        with sqlite3.connect(self.server.db, timeout=10) as db:
            db.execute("UPDATE oauth_states SET expires_at = 1 WHERE used_at IS NULL AND "
                       "org_id = (SELECT org_id FROM oauth_states ORDER BY created_at DESC "
                       "LIMIT 1)")
        self.assertError(self.callback(url), 400, "invalid_request", "state")
        self.assertEqual(self.integrations(key)["slack"]["status"], "available")

    def test_extra_query_parameters_are_ignored(self):
        key = self.key()
        c = self.connect(key, redirect_uri=BACK)
        url = self.authorize(c)
        self.assertIn("iss=", url, "oidc-provider adds iss (RFC 9207)")
        r = self.callback(url + "&scope=chat%3Awrite&authuser=0")
        self.assertEqual(r.status, 302, r)

    # ---- events (contract §15) ----

    def integration_events(self, key):
        body = self.assertJson(self.server.get("/v1/events?limit=100", key=key))
        return [(e["type"], e["data"]["object"]["provider"], e["data"]["object"]["status"],
                 e["data"]["object"]["error"]) for e in reversed(body["events"])
                if e["type"].startswith("integration.")]

    def test_events_of_connections(self):
        key = self.key()
        self.authz.set_deny(True)
        try:
            c = self.connect(key, redirect_uri=BACK)
            self.callback(self.authorize(c))
        finally:
            self.authz.set_deny(False)
        self.connected(key)
        self.connected(key)  # connected again over a connection: no new event
        self.assertJson(self.server.request("DELETE", "/v1/integrations/slack", key=key))
        self.assertJson(self.server.request("DELETE", "/v1/integrations/slack", key=key))
        self.assertEqual(self.integration_events(key), [
            ("integration.error", "slack", "error", "access_denied"),
            ("integration.connected", "slack", "connected", None),
            ("integration.disconnected", "slack", "available", None),
        ])
        body = self.assertJson(self.server.get("/v1/events?type=integration.connected", key=key))
        obj = body["events"][0]["data"]["object"]
        self.assertEqual(set(obj), {"provider", "name", "category", "status", "error",
                                    "connected_at"}, "no tokens, no account in an event")

    # ---- refusals and failures ----

    def test_user_refuses(self):
        key = self.key()
        self.authz.set_deny(True)
        c = self.connect(key, redirect_uri=BACK)
        url = self.authorize(c)
        self.assertEqual(query_params(url)["error"], "access_denied")
        r = self.callback(url)
        self.assertEqual(r.status, 302)
        self.assertEqual(query_params(r.header("Location"))["status"], "error")
        self.assertEqual(query_params(r.header("Location"))["error"], "access_denied")
        i = self.integrations(key)["slack"]
        self.assertEqual((i["status"], i["error"], i["scopes"]), ("error", "access_denied", []))
        # without a redirect_uri: a clear error
        c = self.connect(key)
        self.assertError(self.callback(self.authorize(c)), 400, "invalid_request", "error")
        # a refused reconnection leaves a working connection alone
        self.authz.set_deny(False)
        self.connected(key)
        self.authz.set_deny(True)
        c = self.connect(key, redirect_uri=BACK)
        r = self.callback(self.authorize(c))
        self.assertEqual(query_params(r.header("Location"))["error"], "access_denied")
        i = self.integrations(key)["slack"]
        self.assertEqual((i["status"], i["error"]), ("connected", None))

    def test_wrong_client_secret(self):
        key = self.key()
        before = self.authz.tokens()
        c = self.connect(key, "google_calendar", redirect_uri=BACK)
        r = self.callback(self.authorize(c, "google_calendar"))
        self.assertEqual(r.status, 302)
        loc = query_params(r.header("Location"))
        self.assertEqual((loc["provider"], loc["status"], loc["error"]),
                         ("google_calendar", "error", "invalid_client"))
        i = self.integrations(key)["google_calendar"]
        self.assertEqual((i["status"], i["error"]), ("error", "invalid_client"))
        self.assertEqual(self.authz.tokens()["access_tokens"], before["access_tokens"])
        self.assertNoSecret(["wrong-secret"])

    def test_token_endpoint_failures(self):
        for mode, error in (("html", "invalid_response"), ("garbage", "invalid_response"),
                            ("500", "server_error")):
            with self.subTest(mode=mode):
                key = self.key()
                c = self.connect(key, redirect_uri=BACK)
                url = self.authorize(c)
                self.authz.fail_token_endpoint(mode)
                r = self.callback(url)
                self.authz.fail_token_endpoint("off")
                self.assertEqual(r.status, 302, r)
                self.assertEqual(query_params(r.header("Location"))["error"], error)
                i = self.integrations(key)["slack"]
                self.assertEqual((i["status"], i["error"]), ("error", error))
                # without a redirect_uri it is a 502
                c = self.connect(key)
                url = self.authorize(c)
                self.authz.fail_token_endpoint(mode)
                r = self.callback(url)
                self.authz.fail_token_endpoint("off")
                self.assertError(r, 502, "upstream_error")

    def test_token_endpoint_hangs(self):
        key = self.key()
        c = self.connect(key, redirect_uri=BACK)
        url = self.authorize(c)
        self.authz.fail_token_endpoint("hang")
        t0 = time.time()
        # other requests go on meanwhile: the callback holds no request thread
        import threading
        out = {}
        th = threading.Thread(target=lambda: out.setdefault("r", self.callback(url)))
        th.start()
        for _ in range(20):
            self.integrations(key)
        th.join(40)
        self.assertFalse(th.is_alive())
        r = out["r"]
        self.assertLess(time.time() - t0, 35)
        self.assertEqual(query_params(r.header("Location"))["error"], "provider_unreachable")
        self.assertEqual(self.integrations(key)["slack"]["error"], "provider_unreachable")

    # ---- refresh, against the authorization server ----

    def post_step(self, key):
        """A workflow step posting to Slack; the ended run."""
        emps = self.assertJson(self.server.get("/v1/employees?limit=1", key=key))["employees"]
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "Post", "trigger": {"type": "manual"},
            "steps": [{"employee_id": emps[0]["id"], "action": "slack.post_message",
                       "input": "hello", "options": {"channel": "#general"}}]}, key=key))
        run = self.assertJson(self.server.post("/v1/workflows/%s/run" % wf["id"], {}, key=key))
        path = "/v1/workflows/%s/runs/%s" % (wf["id"], run["id"])
        return self.poll(lambda: (lambda r: r if r["status"] in ("completed", "failed") else None)(
            self.assertJson(self.server.get(path, key=key))), "the run ends", timeout=30)

    def sent_tokens(self):
        import urllib.request
        with urllib.request.urlopen(self.mock.base_url + "/__requests?prefix=/slack/api/chat",
                                    timeout=10) as r:
            doc = json.loads(r.read())
        reqs = doc["requests"] if isinstance(doc, dict) else doc
        return [q["headers"]["authorization"][len("Bearer "):] for q in reqs]

    def test_refresh(self):
        key = self.key("test")
        before = self.connected(key)
        first = self.authz.token_values()
        n = len(self.sent_tokens())
        run = self.post_step(key)
        # The step refreshed first: it sent a token oidc-provider issued by the refresh.
        self.assertEqual(run["status"], "failed")
        self.assertIn("invalid_auth", run["steps"][0]["error"], "the mock refuses the token")
        sent = self.sent_tokens()[n:]
        self.assertEqual(len(sent), 1, sent)
        now = self.authz.token_values()
        self.assertIn(sent[0], now["access_tokens"])
        self.assertNotIn(sent[0], first["access_tokens"])
        after = self.integrations(key)["slack"]
        self.assertEqual(after["status"], "connected")
        self.assertGreater(parse_ts(after["expires_at"]), parse_ts(before["expires_at"]))
        self.assertGreaterEqual(parse_ts(after["connected_at"]), parse_ts(before["connected_at"]))
        self.assertNoSecret(now["access_tokens"] + now["refresh_tokens"])
        # The authorization server refuses the next refresh: reauthorization_required.
        self.authz.revoke_all_refresh()
        n = len(self.sent_tokens())
        run = self.post_step(key)
        self.assertEqual(run["status"], "failed")
        self.assertIn("reauthorization_required", run["steps"][0]["error"])
        self.assertEqual(run["steps"][0]["attempts"], 1)
        self.assertEqual(self.sent_tokens()[n:], [], "no call without a token")
        i = self.integrations(key)["slack"]
        self.assertEqual((i["status"], i["error"]), ("error", "reauthorization_required"))
        # connecting again mends it
        self.assertEqual(self.connected(key)["status"], "connected")

    # ---- isolation ----

    def test_isolation(self):
        org = "iso-" + uuid.uuid4().hex[:8]
        live = self.server.create_key(org, mode="live")
        test = self.server.create_key(org, mode="test")
        self.connected(live)
        self.assertEqual(self.integrations(live)["slack"]["status"], "connected")
        self.assertEqual(self.integrations(test)["slack"]["status"], "available")
        self.assertEqual(self.integrations(self.key())["slack"]["status"], "available")
        # disconnecting in test mode leaves live connected
        self.assertJson(self.server.request("DELETE", "/v1/integrations/slack", key=test))
        self.assertEqual(self.integrations(live)["slack"]["status"], "connected")

    # ---- secrets at rest ----

    def assertNoSecret(self, secrets):
        """None of 'secrets' in the log or any file of the server's directory (database,
        WAL)."""
        files = []
        for root, _, names in os.walk(self.server.tmpdir):
            files += [os.path.join(root, n) for n in names]
        for path in files:
            with open(path, "rb") as f:
                data = f.read()
            for s in secrets:
                self.assertNotIn(s.encode(), data, "%s holds a secret" % path)


@unittest.skipIf(authz_missing(), authz_missing() or "")
class OAuthHardeningTest(IntegrationsHelpers, ServerTestCase):
    """Issue 26 finding 6, against a server with the default settings (which the server of
    cfc3938 also starts with): where users are sent back, and one browser per connection."""

    @classmethod
    def setUpClass(cls):
        cls.start_servers({})

    # ---- where the user is sent back (issue 26, finding 6) ----

    def test_redirect_origins(self):
        """By default users are sent back only to the public URL's origin: the server's own
        origin no longer redirects anywhere (an open redirect), nor with a user name."""
        key = self.key()
        host = self.base[len("http://"):]  # 127.0.0.1:PORT
        for uri in ("https://evil.example/back", "https://app.example.com/back",
                    "https://%s/back" % host, "http://127.0.0.1/back",
                    "http://%s.evil.example/" % host.split(":")[0],
                    "http://user:pw@%s/back" % host, "http://%s@evil.example/" % host,
                    "http://%s\\@evil.example/" % host, "http://evil.example\\%s" % host,
                    "http://[::1]:%s/back" % host.split(":")[1]):
            with self.subTest(redirect_uri=uri):
                self.assertError(self.server.post("/v1/integrations/slack/connect",
                                                  {"redirect_uri": uri}, key=key),
                                 400, "invalid_request", "redirect_uri")
        # the same origin written otherwise is taken, and what a Location cannot carry raw is
        # percent-encoded
        back = "HTTP://%s/caf\u00e9/a\"b<c>?q=\u00fc&r=%%41&s=%%zz" % host
        c = self.connect(key, redirect_uri=back)
        r = self.callback(self.authorize(c))
        self.assertEqual(r.status, 302, r)
        loc = r.header("Location")
        self.assertEqual(loc, "%s/caf%%C3%%A9/a%%22b%%3Cc%%3E?q=%%C3%%BC&r=%%41&s=%%25zz"
                              "&provider=slack&status=connected" % self.base)
        self.assertTrue(all(32 < ord(ch) < 127 for ch in loc), loc)
        c = self.connect(key, redirect_uri=self.base + "/console/")
        r = self.callback(self.authorize(c))
        self.assertTrue(r.header("Location").startswith(self.base + "/console/?provider=slack"),
                        r)

    # ---- the flow is bound to the browser that started it (issue 26, finding 6) ----

    def test_a_link_sent_to_someone_else_connects_nothing(self):
        attacker = self.key()
        r = self.server.post("/v1/integrations/slack/connect",
                             {"redirect_uri": self.base + "/settings"}, key=attacker)
        c = self.assertJson(r)
        cookie = r.header("Set-Cookie")
        # The attacker takes the provider's URL (its state) in their own browser (the one that
        # called connect) and sends it to the victim, who approves at the provider: the
        # victim's browser arrives at the callback without the attacker's cookie. Nothing
        # connects, and the state is used up.
        attacker_jar = self.jar_of(cookie) if cookie else http.cookiejar.CookieJar()
        provider = follow_authorization(c["authorization_url"], self.authz.authorization_endpoint,
                                        jar=attacker_jar)
        victim = http.cookiejar.CookieJar()
        url = follow_authorization(provider, self.callback_url(), jar=victim)
        self.assertIn("code=", url)
        self.assertError(self.callback(url, jar=victim), 400, "invalid_request", "state")
        self.assertNotEqual(self.integrations(attacker)["slack"]["status"], "connected")
        self.assertError(self.callback(url, jar=attacker_jar), 400, "invalid_request", "state")
        self.assertNotEqual(self.integrations(attacker)["slack"]["status"], "connected")
        # the cookie that binds it: short-lived, not for scripts, not sent by other sites' posts
        self.assertRegex(cookie, r"^workforce_oauth=[A-Za-z0-9]{40}; ")
        attrs = [a.strip() for a in cookie.split(";")[1:]]
        self.assertIn("HttpOnly", attrs)
        self.assertIn("SameSite=Lax", attrs)
        self.assertIn("Path=/v1/integrations/slack/", attrs)
        self.assertIn("Max-Age=600", attrs)

        # The start page opened by a browser without the cookie (a link sent to someone) does
        # not go on: it says whose organization the connection is for, and asks.
        c = self.assertJson(self.server.post("/v1/integrations/slack/connect", {},
                                             key=attacker))
        start = c["authorization_url"][len(self.base):]
        page = self.server.request("GET", start)
        self.assertEqual(page.status, 200, page)
        self.assertTrue(page.header("Content-Type").startswith("text/html"))
        self.assertIsNone(page.header("Location"))
        self.assertIn(b"in-", page.body, "names the organization")
        self.assertIn(b"live mode", page.body)
        self.assertIn(b"someone sent you this link", page.body)
        self.assertEqual(page.header("X-Frame-Options"), "DENY")
        self.assertIn("frame-ancestors 'none'", page.header("Content-Security-Policy"))
        confirm_cookie = [h for h in page.header_all("Set-Cookie")
                          if h.startswith("workforce_oauth_confirm=")][0]
        self.assertIn("SameSite=Strict", confirm_cookie)
        token = re.search(rb'name="confirm" value="([A-Za-z0-9]+)"', page.body).group(1).decode()
        # Continue pressed from another site carries no SameSite=Strict cookie: refused
        self.assertError(self.server.request("GET", start + "&confirm=" + token), 400,
                         "invalid_request", "confirm")
        self.assertError(self.server.request("GET", start + "&confirm=" + "x" * 40, headers={
            "Cookie": confirm_cookie.split(";")[0]}), 400, "invalid_request", "confirm")
        # Continue on the page goes on, and binds the connection to that browser only
        go = self.server.request("GET", start + "&confirm=" + token,
                                 headers={"Cookie": confirm_cookie.split(";")[0]})
        self.assertEqual(go.status, 302, go)
        self.assertTrue(go.header("Location").startswith(self.authz.authorization_endpoint))
        bound = [h for h in go.header_all("Set-Cookie") if h.startswith("workforce_oauth=")][0]
        # another browser, even the one that called connect, can no longer open it
        self.assertError(self.server.request("GET", start), 400, "invalid_request", "state")
        self.assertError(self.server.request("GET", start, headers={"Cookie": cookie.split(";")[0]}),
                         400, "invalid_request", "state")
        # the browser that confirmed finishes it
        victim2 = self.jar_of(bound)
        url = follow_authorization(go.header("Location"), self.callback_url(), jar=victim2)
        self.assertEqual(self.callback(url, jar=victim2).status, 200)
        self.assertEqual(self.integrations(attacker)["slack"]["status"], "connected")


if __name__ == "__main__":
    unittest.main()
