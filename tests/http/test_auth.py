# SPDX-License-Identifier: MIT
"""Authentication (401s), key lifecycle through the CLI (revoke, expiry), scopes (403),
GET /v1/account, secrets never leaking, and the CLI's exit statuses.

These servers run with the default rate limits (no WORKFORCE_RATE_LIMITS), so /v1/account can
be checked against the contract's tier table; each org stays well under its burst."""

import random
import string
import time

from harness import (DEFAULT_TIER_LIMITS, KEY_ID_RE, KEY_RE, ORG_ID_RE, SCOPES, TS_RE,
                     ServerTestCase, parse_ts)

B62 = string.ascii_letters + string.digits


def rand62(n):
    return "".join(random.choice(B62) for _ in range(n))


class AuthTest(ServerTestCase):
    server_env = {}

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.key = s.create_key("auth-main", tier="agency")
        cls.expiring = s.create_key("auth-exp", expires_in="1s")
        cls.hour_key = s.create_key("auth-exp-hour", expires_in="1h")

    def test_missing_header(self):
        for method, path in (("GET", "/v1/employees"), ("GET", "/v1/account"),
                             ("POST", "/v1/employees"), ("GET", "/v1/employees/emp_x"),
                             ("GET", "/v1/employees/emp_x/stats"),
                             ("PATCH", "/v1/employees/emp_x")):
            with self.subTest(method=method, path=path):
                r = self.server.request(method, path)
                self.assertError(r, 401, "missing_api_key")

    def test_invalid_headers(self):
        k = self.key
        body40 = k[len("svc_live_sk_"):]
        values = [
            "Basic x",
            "Basic dXNlcjpwYXNz",
            "Bearer",
            "Bearer ",
            k,
            "Token " + k,
            "Bearer: " + k,
            "Bearer svc_prod_sk_" + body40,
            "Bearer svc_live_pk_" + body40,
            "Bearer svc_live_" + body40,
            "Bearer sk_live_" + body40,
            "Bearer svc_live_sk_" + body40[:-1],
            "Bearer svc_live_sk_" + body40 + "A",
            "Bearer svc_live_sk_abc",
            "Bearer svc_live_sk_",
            "Bearer svc_live_sk_" + body40[:-1] + "-",
            "Bearer svc_live_sk_" + body40[:-1] + "_",
            "Bearer svc_test_sk_" + body40,
            "Bearer " + k[:-1] + ("a" if k[-1] != "a" else "b"),
            "Bearer " + k.upper(),
            "Bearer svc_live_sk_" + rand62(40),
            "Bearer svc_test_sk_" + rand62(40),
            "Bearer " + "x" * 300,
        ]
        for v in values:
            with self.subTest(authorization=v[:40]):
                r = self.server.get("/v1/account", headers={"Authorization": v})
                self.assertError(r, 401, "invalid_api_key")
                self.assertNotIn(body40.encode(), r.body)

    def test_valid_key(self):
        r = self.server.get("/v1/account", key=self.key)
        self.assertJson(r, 200)

    def test_revoked_key(self):
        s = self.server
        k = s.create_key("auth-revoke")
        other = s.create_key("auth-revoke")
        self.assertEqual(s.get("/v1/account", key=k).status, 200)
        kid = s.key_id("auth-revoke", k)
        self.assertRegex(kid, KEY_ID_RE)
        p = s.revoke(kid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "revoked " + kid)
        # Another process's change is seen within 1 s (the contract; the server looks every
        # 0.1 s): wait for it, bounded.
        self.poll(lambda: s.get("/v1/account", key=k).status == 401, "the revoked key refused",
                  timeout=1.0, step=0.02)
        r = s.get("/v1/account", key=k)
        self.assertError(r, 401, "invalid_api_key")
        r = s.get("/v1/employees", key=k)
        self.assertError(r, 401, "invalid_api_key")
        rows = {row["id"]: row for row in s.keys_list("auth-revoke")}
        self.assertEqual(rows[kid]["status"], "revoked")
        # The other key of the org is untouched.
        self.assertEqual(s.get("/v1/account", key=other).status, 200)

    def test_expired_key(self):
        # the key expires 1 s after it was made: wait for the server to say so
        def refused():
            r = self.server.get("/v1/account", key=self.expiring)
            return r if r.status == 401 else None
        r = self.poll(refused, "the key's expiry", 15, step=0.1)
        self.assertError(r, 401, "invalid_api_key")
        rows = self.server.keys_list("auth-exp")
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["status"], "expired")
        self.assertRegex(rows[0]["expires_at"], TS_RE)

    def test_key_with_future_expiry(self):
        self.assertEqual(self.server.get("/v1/account", key=self.hour_key).status, 200)
        row = self.server.keys_list("auth-exp-hour")[0]
        self.assertEqual(row["status"], "active")
        delta = parse_ts(row["expires_at"]) - parse_ts(row["created_at"])
        self.assertAlmostEqual(delta, 3600, delta=2)


class ScopeTest(ServerTestCase):
    server_env = {}

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.full = s.create_key("scope-org", tier="agency")
        cls.read = s.create_key("scope-org", scopes="employees:read")
        cls.write = s.create_key("scope-org", scopes="employees:write")
        cls.chat = s.create_key("scope-org", scopes="chat")
        cls.both = s.create_key("scope-org", scopes="employees:read,employees:write")
        cls.emp = s.get("/v1/employees?limit=1", key=cls.full).json["employees"][0]["id"]

    def _matrix(self, key, expect):
        e = self.emp
        reqs = {
            "list": ("GET", "/v1/employees", None),
            "detail": ("GET", "/v1/employees/" + e, None),
            "stats": ("GET", "/v1/employees/%s/stats" % e, None),
            "create": ("POST", "/v1/employees",
                       {"name": "Scoped", "role": "r", "category": "hr"}),
            "update": ("PATCH", "/v1/employees/" + e, {"description": "scoped"}),
            "account": ("GET", "/v1/account", None),
        }
        for name, (method, path, body) in reqs.items():
            with self.subTest(op=name):
                r = self.server.request(method, path, key=key, json_body=body)
                if name in expect:
                    self.assertJson(r, 200)
                else:
                    self.assertError(r, 403, "permission_denied")
                self.assertIsNotNone(r.header("X-RateLimit-Limit"), "authenticated response")

    def test_read_scope(self):
        self._matrix(self.read, {"list", "detail", "stats", "account"})

    def test_write_scope(self):
        self._matrix(self.write, {"create", "update", "account"})

    def test_chat_scope(self):
        self._matrix(self.chat, {"account"})

    def test_read_write_scopes(self):
        self._matrix(self.both, {"list", "detail", "stats", "create", "update", "account"})

    def test_no_scopes_full_access(self):
        self._matrix(self.full, {"list", "detail", "stats", "create", "update", "account"})

    def test_account_lists_scopes(self):
        for key, scopes in ((self.read, ["employees:read"]), (self.chat, ["chat"]),
                            (self.both, ["employees:read", "employees:write"])):
            with self.subTest(scopes=scopes):
                body = self.assertJson(self.server.get("/v1/account", key=key))
                self.assertEqual(sorted(body["key"]["scopes"]), sorted(scopes))

    def test_rate_headers_on_error_responses(self):
        e = self.emp
        for method, path, body, status in (
                ("GET", "/v1/employees/emp_nosuchemployee0000000", None, 404),
                ("GET", "/v1/employees?limit=0", None, 400),
                ("POST", "/v1/employees", {"bogus": 1}, 400),
                ("GET", "/v1/employees/%s/stats?period=1y" % e, None, 400)):
            with self.subTest(path=path):
                r = self.server.request(method, path, key=self.full, json_body=body)
                self.assertEqual(r.status, status, r)
                for h in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
                    self.assertRegex(r.header(h, ""), r"^\d+$", h)


class AccountTest(ServerTestCase):
    server_env = {}

    def seen(self, key, pred):
        """Until /v1/account shows what 'pred' wants: a change made by the CLI (another process)
        is seen within 1 s (the contract; the server looks every 0.1 s)."""
        def shown():
            r = self.server.get("/v1/account", key=key)
            return r.status == 200 and pred(r.json)
        # a step of 0.05 s: at most 20 requests, well inside every tier's burst
        self.poll(shown, "the CLI's change shown by /v1/account", timeout=1.0, step=0.05)

    def _account(self, key):
        r = self.server.get("/v1/account", key=key)
        body = self.assertJson(r, 200)
        self.assertEqual(set(body), {"id", "name", "tier", "credits_remaining", "key", "user",
                                     "rate_limits"}, body)
        self.assertIsNone(body["user"], body)  # a key: no signed-in user
        self.assertEqual(set(body["key"]), {"id", "mode", "last4", "scopes"}, body)
        self.assertEqual(set(body["rate_limits"]), {"requests_per_minute", "burst",
                                                    "concurrent"}, body)
        return r, body

    def test_fields_per_tier(self):
        for tier in ("starter", "manager", "agency"):
            with self.subTest(tier=tier):
                slug = "acct-" + tier
                key = self.server.create_key(slug, tier=tier, credits=42)
                r, body = self._account(key)
                self.assertRegex(body["id"], ORG_ID_RE)
                self.assertEqual(body["name"], slug)
                self.assertEqual(body["tier"], tier)
                self.assertEqual(body["credits_remaining"], 42)
                self.assertEqual(body["key"]["mode"], "live")
                self.assertEqual(body["key"]["last4"], key[-4:])
                self.assertEqual(body["key"]["id"], self.server.key_id(slug, key))
                # An unscoped key has full access; how that is spelled is not fixed.
                self.assertIn(body["key"]["scopes"], ([], None, ["*"], SCOPES))
                self.assertEqual(body["rate_limits"], DEFAULT_TIER_LIMITS[tier])
                self.assertEqual(r.header("X-RateLimit-Limit"),
                                 str(DEFAULT_TIER_LIMITS[tier]["requests_per_minute"]))

    def test_test_key_gets_starter_limits(self):
        live = self.server.create_key("acct-testmode", tier="agency")
        test = self.server.create_key("acct-testmode", mode="test")
        self.assertRegex(test, r"^svc_test_sk_")
        r, body = self._account(test)
        self.assertEqual(body["key"]["mode"], "test")
        self.assertEqual(body["key"]["last4"], test[-4:])
        self.assertEqual(body["tier"], "agency")
        self.assertEqual(body["rate_limits"], DEFAULT_TIER_LIMITS["starter"])
        self.assertEqual(r.header("X-RateLimit-Limit"), "60")
        r, body = self._account(live)
        self.assertEqual(body["rate_limits"], DEFAULT_TIER_LIMITS["agency"])
        r, body_live = self._account(live)
        self.assertEqual(body_live["id"], body["id"])

    def test_defaults_when_creating(self):
        key = self.server.create_key("acct-defaults")
        _, body = self._account(key)
        self.assertEqual(body["tier"], "starter")
        self.assertEqual(body["credits_remaining"], 0)
        self.assertEqual(body["key"]["mode"], "live")

    def test_tier_and_credits_apply_only_when_creating(self):
        k1 = self.server.create_key("acct-once", tier="manager", credits=7)
        k2 = self.server.create_key("acct-once", tier="agency", credits=99)
        for k in (k1, k2):
            _, body = self._account(k)
            self.assertEqual(body["tier"], "manager")
            self.assertEqual(body["credits_remaining"], 7)

    def test_orgs_update(self):
        key = self.server.create_key("acct-upd")
        p = self.server.orgs_update("acct-upd", credits=500)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["acct-upd", "starter", "500"])
        self.seen(key, lambda b: b["credits_remaining"] == 500)
        _, body = self._account(key)
        self.assertEqual(body["credits_remaining"], 500)
        self.assertEqual(body["tier"], "starter")
        p = self.server.orgs_update("acct-upd", tier="manager")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["acct-upd", "manager", "500"])
        self.seen(key, lambda b: b["tier"] == "manager")
        r, body = self._account(key)
        self.assertEqual(body["tier"], "manager")
        self.assertEqual(body["credits_remaining"], 500)
        self.assertEqual(body["rate_limits"], DEFAULT_TIER_LIMITS["manager"])
        self.assertEqual(r.header("X-RateLimit-Limit"), "300")
        p = self.server.orgs_update("acct-upd", tier="agency", credits=0)
        self.assertEqual(p.stdout.split(), ["acct-upd", "agency", "0"])
        self.seen(key, lambda b: b["tier"] == "agency")
        _, body = self._account(key)
        self.assertEqual((body["tier"], body["credits_remaining"]), ("agency", 0))


class SecretsTest(ServerTestCase):
    """Keys never appear in a response or in the server's log."""
    server_env = {}

    def test_no_key_in_responses_or_log(self):
        s = self.server
        live = s.create_key("secret-org", tier="agency")
        test = s.create_key("secret-org", mode="test")
        ro = s.create_key("secret-org", scopes="employees:read")
        gone = s.create_key("secret-org")
        s.revoke(s.key_id("secret-org", gone))
        unknown = "svc_live_sk_" + rand62(40)
        malformed = "svc_live_sk_" + rand62(20) + "-!" + rand62(18)
        secrets = [live, test, ro, gone, unknown, malformed]
        responses = []
        emp = s.get("/v1/employees?limit=1", key=live).json["employees"][0]["id"]
        for key in secrets:
            responses += [
                s.get("/v1/account", key=key),
                s.get("/v1/employees?limit=2", key=key),
                s.get("/v1/employees/" + emp, key=key),
                s.get("/v1/employees/emp_nosuch00000000000000", key=key),
                s.post("/v1/employees", {"name": "n", "role": "r", "category": "hr"}, key=key),
                s.request("POST", "/v1/employees", body="{bad", key=key),
                s.get("/v1/employees?limit=0", key=key),
                s.request("DELETE", "/v1/employees", key=key),
                s.get("/v1/nope", key=key),
                s.request("GET", "/v1/account", headers={"Authorization": "Basic " + key}),
                s.request("GET", "/v1/account", headers={"Authorization": key}),
            ]
        self.assertEqual(responses[0].status, 200)
        for r in responses:
            blob = r.body + repr(r.headers).encode()
            for key in secrets:
                self.assertNotIn(key.encode(), blob)
                self.assertNotIn(key[12:].encode(), blob)
        p = s.cli("keys", "list", "--org", "secret-org")
        for key in secrets:
            self.assertNotIn(key[12:], p.stdout + p.stderr)
        # everything the server would log for those requests is written once it has stopped
        self.assertEqual(s.stop(), 0)
        log = s.log_text()
        s.start()
        for key in secrets:
            self.assertNotIn(key[12:], log, "a key body appears in the server log")


class CliTest(ServerTestCase):
    """CLI output formats and exit statuses (the server runs but is not needed)."""
    server_env = {}

    def test_keys_create_output(self):
        for mode in ("live", "test"):
            with self.subTest(mode=mode):
                p = self.server.cli("keys", "create", "--org", "cli-out", "--mode", mode)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertRegex(p.stdout, r"^svc_%s_sk_[A-Za-z0-9]{40}\n$" % mode)
        p = self.server.cli("keys", "create", "--org", "cli-out")
        self.assertRegex(p.stdout.strip(), KEY_RE)
        self.assertTrue(p.stdout.startswith("svc_live_sk_"), "mode defaults to live")

    def test_keys_list_format(self):
        s = self.server
        plain = s.create_key("cli-list")
        scoped = s.create_key("cli-list", mode="test", scopes="employees:read")
        expiring = s.create_key("cli-list", expires_in="30d")
        p = s.cli("keys", "list", "--org", "cli-list")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 3, p.stdout)
        for ln in lines:
            self.assertEqual(len(ln.split("\t")), 7, repr(ln))
        rows = {r["last4"]: r for r in s.keys_list("cli-list")}
        r = rows[plain[-4:]]
        self.assertRegex(r["id"], KEY_ID_RE)
        self.assertEqual((r["mode"], r["scopes"], r["expires_at"], r["status"]),
                         ("live", "*", "-", "active"))
        self.assertRegex(r["created_at"], TS_RE)
        self.assertAlmostEqual(parse_ts(r["created_at"]), time.time(), delta=60)
        r = rows[scoped[-4:]]
        self.assertEqual((r["mode"], r["scopes"], r["status"]),
                         ("test", "employees:read", "active"))
        r = rows[expiring[-4:]]
        self.assertRegex(r["expires_at"], TS_RE)
        self.assertAlmostEqual(parse_ts(r["expires_at"]) - parse_ts(r["created_at"]),
                               30 * 86400, delta=2)

    def test_durations(self):
        for d in ("90s", "10m", "12h", "30d"):
            with self.subTest(d=d):
                p = self.server.cli("keys", "create", "--org", "cli-dur", "--expires-in", d)
                self.assertEqual(p.returncode, 0, p.stderr)

    def test_slug_rules(self):
        for slug in ("a", "0", "a-b-c", "x" * 63, "9lives"):
            with self.subTest(slug=slug):
                p = self.server.cli("keys", "create", "--org", slug)
                self.assertEqual(p.returncode, 0, p.stderr)

    def test_not_found_exit_1(self):
        for args in (("keys", "list", "--org", "cli-nosuch-org"),
                     ("keys", "revoke", "key_" + "A" * 24),
                     ("orgs", "update", "cli-nosuch-org", "--credits", "5")):
            with self.subTest(args=args):
                p = self.server.cli(*args)
                self.assertEqual(p.returncode, 1, (p.stdout, p.stderr))
                self.assertTrue(p.stderr.strip(), "a message on stderr")

    BAD_USAGE = [
        [],
        ["bogus"],
        ["keys"],
        ["keys", "bogus"],
        ["keys", "create"],
        ["keys", "create", "--org"],
        ["keys", "create", "--org", "Bad_Slug"],
        ["keys", "create", "--org", "-lead"],
        ["keys", "create", "--org", "UPPER"],
        ["keys", "create", "--org", "x" * 64],
        ["keys", "create", "--org", ""],
        ["keys", "create", "--org", "cli-bad", "--mode", "prod"],
        ["keys", "create", "--org", "cli-bad", "--mode"],
        ["keys", "create", "--org", "cli-bad", "--tier", "gold"],
        ["keys", "create", "--org", "cli-bad", "--credits", "abc"],
        ["keys", "create", "--org", "cli-bad", "--credits", "1.5"],
        ["keys", "create", "--org", "cli-bad", "--expires-in", "10"],
        ["keys", "create", "--org", "cli-bad", "--expires-in", "10x"],
        ["keys", "create", "--org", "cli-bad", "--expires-in", "abc"],
        ["keys", "create", "--org", "cli-bad", "--expires-in", "m5"],
        ["keys", "create", "--org", "cli-bad", "--scopes", "bogus:scope"],
        ["keys", "create", "--org", "cli-bad", "--bogus-flag"],
        ["keys", "create", "--org", "cli-bad", "extra-arg"],
        ["keys", "list"],
        ["keys", "list", "--org"],
        ["keys", "revoke"],
        ["orgs"],
        ["orgs", "bogus"],
        ["orgs", "update"],
        ["orgs", "update", "cli-bad-org", "--tier", "gold"],
        ["orgs", "update", "cli-bad-org", "--credits", "x"],
        ["serve", "--bogus"],
        ["serve", "--listen"],
    ]

    def test_bad_usage_exit_2(self):
        self.server.create_key("cli-bad-org")
        for args in self.BAD_USAGE:
            with self.subTest(args=args):
                p = self.server.cli(*args, timeout=10)
                self.assertEqual(p.returncode, 2, (p.stdout, p.stderr))
                self.assertTrue(p.stderr.strip(), "a message on stderr")
                self.assertNotIn("svc_", p.stdout)
        # Nothing was created by the refused commands.
        p = self.server.cli("keys", "list", "--org", "cli-bad")
        self.assertEqual(p.returncode, 1, (p.stdout, p.stderr))
