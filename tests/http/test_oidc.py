# SPDX-License-Identifier: MIT
"""OpenID Connect sign-in (issue 28, contract §20), against a real provider: oidc-provider
9.13.3 (tests/oidc/provider.mjs) on 127.0.0.1 with a client registered for the server, driven
without a browser (its interactions finish at once; oauthlib.follow_authorization follows the
redirects with a cookie jar).

Signed in: an existing user, a new member of an allowed domain, after the provider rotated its
key (the JWKS fetched again, once), and with an ES256 key. Refused, to the console's sign-in
page with a code: an email outside the allowed domains or not verified
(oidc_email_not_allowed), a disabled user (user_disabled), and oidc_failed for an ID token with
a wrong nonce, expired, re-signed by a key not in the JWKS or with alg none, a state that is not
the browser's flow cookie's, no cookie, a replayed callback, an unknown kid within 10 s of the
last fetch for one. Not configured: 404 oidc_not_configured."""

import http.cookiejar
import time
import unittest
import urllib.parse

from harness import GENEROUS_LIMITS, Server, free_port
from oauthlib import cookie_header, follow_authorization, query_params
from oidclib import OidcProvider, provider_missing

CLIENT_ID, CLIENT_SECRET = "wf-console", "oidc-client-secret"
SIGNED_IN = "/console/"
REFUSED = "/console/#/sign-in?error="


@unittest.skipIf(provider_missing(), provider_missing() or "")
class OidcSignIn(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        port = free_port()
        cls.base = "http://127.0.0.1:%d" % port
        cls.cb = cls.base + "/v1/sessions/oidc/callback"
        cls.op = OidcProvider().start(CLIENT_ID, CLIENT_SECRET, [cls.cb])
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_PUBLIC_URL": cls.base,
               "WORKFORCE_OIDC_ISSUER": cls.op.issuer, "WORKFORCE_OIDC_CLIENT_ID": CLIENT_ID,
               "WORKFORCE_OIDC_CLIENT_SECRET": CLIENT_SECRET,
               "WORKFORCE_OIDC_ALLOWED_DOMAINS": "example.com"}
        cls.server = Server(env=env)
        try:
            cls.server.start(port=port)
            cls.server.create_key("acme")  # the one organization: new OIDC users join it
        except BaseException:
            cls.server.cleanup()
            cls.op.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()
        cls.op.stop()

    def setUp(self):
        self.op.tamper("off")

    # -- the browser --

    def start_flow(self, jar):
        """From /v1/sessions/oidc/start through the provider, up to (not into) the callback."""
        return follow_authorization(self.base + "/v1/sessions/oidc/start", self.cb, jar=jar)

    def callback(self, url, jar):
        cookie = cookie_header(jar, url)
        return self.server.request("GET", url[len(self.base):],
                                   headers={"Cookie": cookie} if cookie else None)

    def sign_in(self, email=None, verified=True):
        """A whole sign-in as 'email' (the provider's account): the callback's response."""
        if email:
            self.op.account(email, verified)
        jar = http.cookiejar.CookieJar()
        return self.callback(self.start_flow(jar), jar)

    def assertSignedIn(self, r, email=None, role="member"):
        """A callback that signed in: to the console, the flow's cookie forgotten, a session
        cookie that GET /v1/sessions/current takes as the user 'email' with 'role'."""
        self.assertEqual(r.status, 302, r.body[:300])
        self.assertEqual(r.header("Location"), SIGNED_IN)
        cookies = r.header_all("Set-Cookie")
        self.assertTrue(any(c.startswith("wf_oidc=;") and "Max-Age=0" in c for c in cookies),
                        cookies)
        session = [c.split(";", 1)[0] for c in cookies if c.startswith("wf_session=")]
        self.assertEqual(len(session), 1, cookies)
        me = self.server.request("GET", "/v1/sessions/current", headers={"Cookie": session[0]})
        self.assertEqual(me.status, 200, me.body[:300])
        if email:
            self.assertEqual(me.json["user"]["email"], email.lower())
        self.assertEqual(me.json["user"]["role"], role)
        return me.json["user"]

    def assertRefused(self, r, code):
        self.assertEqual(r.status, 302, r.body[:300])
        self.assertEqual(r.header("Location"), REFUSED + code)
        self.assertFalse(any(c.startswith("wf_session=") for c in r.header_all("Set-Cookie")))
        return r

    def users(self):
        p = self.server.cli("users", "list", "--org", "acme")
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    # -- the tests --

    def test_start_redirects_with_pkce_and_a_sealed_cookie(self):
        r = self.server.request("GET", "/v1/sessions/oidc/start")
        self.assertEqual(r.status, 302)
        loc = r.header("Location")
        self.assertTrue(loc.startswith(self.op.info["authorization_endpoint"] + "?"), loc)
        q = query_params(loc)
        self.assertEqual(q["response_type"], "code")
        self.assertEqual(q["client_id"], CLIENT_ID)
        self.assertEqual(q["redirect_uri"], self.cb)
        self.assertEqual(q["code_challenge_method"], "S256")
        self.assertEqual(len(q["code_challenge"]), 43)
        self.assertEqual(len(q["state"]), 43)
        self.assertEqual(len(q["nonce"]), 43)
        self.assertIn("openid", q["scope"].split())
        self.assertIn("email", q["scope"].split())
        c = r.header("Set-Cookie")
        self.assertTrue(c.startswith("wf_oidc="), c)
        for part in ("HttpOnly", "SameSite=Lax", "Path=/v1/sessions/oidc", "Max-Age=600"):
            self.assertIn(part, c)
        self.assertNotIn("Secure", c)  # the public URL is http
        value = c.split(";", 1)[0].split("=", 1)[1]
        for secret in (q["state"], q["nonce"]):
            self.assertNotIn(secret, value)  # sealed, not readable

    def test_new_member_of_an_allowed_domain(self):
        self.assertNotIn("new.member@example.com", self.users())
        first = self.assertSignedIn(self.sign_in("new.member@example.com"),
                                    "new.member@example.com")
        self.assertIn("new.member@example.com", self.users())
        # the same user again (the provider's case differs): the existing one, not a new one
        again = self.assertSignedIn(self.sign_in("New.Member@Example.com"),
                                    "new.member@example.com")
        self.assertEqual(first["id"], again["id"])
        self.assertEqual(self.users().count("new.member@example.com"), 1)
        audit = self.server.cli("audit", "--org", "acme", "--limit", "50").stdout
        self.assertIn("user.create", audit)
        self.assertIn("session.create", audit)

    def test_invited_user_outside_the_allowed_domains(self):
        p = self.server.cli("users", "create", "--org", "acme", "--email",
                            "Grace@Partner.org", "--role", "admin")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertSignedIn(self.sign_in("grace@partner.org"), "grace@partner.org", "admin")

    def test_disabled_user(self):
        self.assertSignedIn(self.sign_in("leaver@example.com"), "leaver@example.com")
        p = self.server.cli("users", "disable", "--org", "acme", "--email", "leaver@example.com")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRefused(self.sign_in("leaver@example.com"), "user_disabled")

    def test_email_outside_the_allowed_domains(self):
        self.assertRefused(self.sign_in("eve@elsewhere.org"), "oidc_email_not_allowed")
        self.assertRefused(self.sign_in("eve@sub.example.com"), "oidc_email_not_allowed")

    def test_email_not_verified(self):
        self.assertRefused(self.sign_in("unverified@example.com", verified=False),
                           "oidc_email_not_allowed")

    def test_bad_id_tokens(self):
        for mode in ("wrong_nonce", "expired", "resigned", "alg_none"):
            with self.subTest(mode=mode):
                self.op.tamper(mode)
                self.assertRefused(self.sign_in("ada@example.com"), "oidc_failed")
        self.op.tamper("off")
        self.assertSignedIn(self.sign_in("ada@example.com"))
        log = self.server.log_text()
        for check in ("nonce", "exp", "signature", "alg"):
            self.assertIn("(%s)" % check, log)

    def test_state_not_this_browsers(self):
        jar_a, jar_b = http.cookiejar.CookieJar(), http.cookiejar.CookieJar()
        url_a = self.start_flow(jar_a)
        self.start_flow(jar_b)
        # B's browser comes back with A's code and state: its cookie is another flow's
        self.assertRefused(self.callback(url_a, jar_b), "oidc_failed")
        # no cookie at all
        r = self.server.request("GET", url_a[len(self.base):])
        self.assertRefused(r, "oidc_failed")
        # a state altered in the URL
        q = query_params(url_a)
        forged = "%s?%s" % (self.cb, urllib.parse.urlencode(
            {"code": q["code"], "state": q["state"][:-1] + ("A" if q["state"][-1] != "A" else "B")}))
        self.assertRefused(self.callback(forged, jar_a), "oidc_failed")

    def test_callback_replayed(self):
        self.op.account("ada@example.com")
        jar = http.cookiejar.CookieJar()
        url = self.start_flow(jar)
        cookie = cookie_header(jar, url)
        self.assertSignedIn(self.callback(url, jar))
        # the same callback with the same (now forgotten) cookie: the code is used
        r = self.server.request("GET", url[len(self.base):], headers={"Cookie": cookie})
        self.assertRefused(r, "oidc_failed")

    def test_rotated_key(self):
        self.assertSignedIn(self.sign_in("ada@example.com"))
        before = self.op.state()["jwks_requests"]
        self.op.rotate()
        self.assertSignedIn(self.sign_in("ada@example.com"))
        self.assertEqual(self.op.state()["jwks_requests"], before + 1, "fetched again, once")
        self.assertSignedIn(self.sign_in("ada@example.com"))
        self.assertEqual(self.op.state()["jwks_requests"], before + 1, "then kept")
        # A second rotation within 10 s of that fetch: the new kid is not fetched for.
        self.op.rotate("ES256")
        self.assertRefused(self.sign_in("ada@example.com"), "oidc_failed")
        self.assertEqual(self.op.state()["jwks_requests"], before + 1, "rate-limited")
        # Once 10 s have passed since that fetch, the next unknown kid is fetched for.
        deadline = time.time() + 20
        while True:
            r = self.sign_in("ada@example.com")
            if r.header("Location") == SIGNED_IN or time.time() > deadline:
                break
            time.sleep(0.5)
        self.assertSignedIn(r)
        self.assertEqual(self.op.state()["jwks_requests"], before + 2)


class OidcNotConfigured(unittest.TestCase):
    def test_start_and_callback_404(self):
        server = Server(env={"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS})
        try:
            server.start()
            for path in ("/v1/sessions/oidc/start", "/v1/sessions/oidc/callback?code=a&state=b"):
                r = server.request("GET", path)
                self.assertEqual(r.status, 404, path)
                self.assertEqual(r.error["code"], "oidc_not_configured")
        finally:
            server.stop()
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
