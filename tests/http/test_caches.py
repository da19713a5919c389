# SPDX-License-Identifier: MIT
"""The request path's caches (verified keys with their organization, pages of GET /v1/employees)
never serve what changed: a key revoked, an organization's tier or credits changed, an employee
updated, by the CLI from another process or by this server, takes effect within 1 s (the
contract's bound; on SQLite it is the next request), and no tenant ever sees another's page.

Each test first makes the cache hold the old answer (several identical requests, with /metrics
showing hits), then changes the data, then waits, bounded by 1 s, for the new answer."""

import re
import time

from harness import GENEROUS_LIMITS, ServerTestCase

BOUND = 1.0  # seconds: a change must be seen within this


class CacheCoherenceTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}
    one_node = True  # one node's caches and their counters; the CLI is the other process

    def hits(self, cache):
        m = self.server.get("/metrics").body.decode()
        v = re.search(r'^workforce_cache_hits_total\{cache="%s"\} (\d+)$' % cache, m, re.M)
        self.assertIsNotNone(v, "no hit counter for %s" % cache)
        return int(v.group(1))

    def warm(self, path, key, cache):
        """Ask 'path' until the cache answers it (its hit count moves); returns the body."""
        before = self.hits(cache)
        first = self.assertJson(self.server.get(path, key=key))
        for _ in range(3):
            self.assertEqual(self.assertJson(self.server.get(path, key=key)), first)
        self.assertGreater(self.hits(cache), before, "the %s cache was not used" % cache)
        return first

    def within_bound(self, fn, what):
        """fn() until true, failing if that takes more than BOUND seconds from now."""
        t0 = time.monotonic()
        while True:
            if fn():
                return time.monotonic() - t0
            if time.monotonic() - t0 > BOUND:
                self.fail("%s: not within %.1f s" % (what, BOUND))
            time.sleep(0.02)

    def test_revoked_key_by_cli(self):
        s = self.server
        key = s.create_key("cache-revoke")
        self.warm("/v1/account", key, "keys")
        self.warm("/v1/employees?limit=50", key, "keys")
        p = s.revoke(s.key_id("cache-revoke", key))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.within_bound(lambda: s.get("/v1/account", key=key).status == 401,
                          "the revoked key refused")
        for path in ("/v1/account", "/v1/employees?limit=50"):
            self.assertError(s.get(path, key=key), 401, "invalid_api_key")

    def test_tier_and_credits_by_cli(self):
        s = self.server
        key = s.create_key("cache-org", tier="starter", credits=5)
        body = self.warm("/v1/account", key, "keys")
        self.assertEqual((body["tier"], body["credits_remaining"]), ("starter", 5))
        p = s.orgs_update("cache-org", tier="manager", credits=77)
        self.assertEqual(p.returncode, 0, p.stderr)

        def changed():
            b = s.get("/v1/account", key=key).json
            return (b["tier"], b["credits_remaining"]) == ("manager", 77)
        self.within_bound(changed, "the new tier and credits shown")
        # the tier decides what the key may do: a manager employee can now be chatted with
        emps = s.get("/v1/employees?limit=100", key=key).json["employees"]
        mgr = [e for e in emps if e["tier"] == "manager"][0]["id"]
        r = s.post("/v1/chat", {"employee_id": mgr, "message": "hello"}, key=key)
        self.assertEqual(r.status, 200, r)
        p = s.orgs_update("cache-org", tier="starter", credits=0)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.within_bound(lambda: s.get("/v1/account", key=key).json["credits_remaining"] == 0,
                          "credits set to 0 shown")
        r = s.post("/v1/chat", {"employee_id": mgr, "message": "hello"}, key=key)
        self.assertError(r, 403, "permission_denied", "employee_id")

    def test_employee_updated_by_cli(self):
        s = self.server
        key = s.create_key("cache-emp", tier="agency")
        page = self.warm("/v1/employees?limit=50", key, "answers")
        mgr = [e for e in page["employees"] if e["tier"] == "manager"][0]["id"]
        p = s.cli("employees", "update", mgr, "--tier", "starter")
        self.assertEqual(p.returncode, 0, p.stderr)

        def tier_in_list():
            items = s.get("/v1/employees?limit=50", key=key).json["employees"]
            return [e["tier"] for e in items if e["id"] == mgr] == ["starter"]
        self.within_bound(tier_in_list, "the employee's new tier in the list")

    def test_employee_detail_by_cli_and_by_api(self):
        s = self.server
        key = s.create_key("cache-detail", tier="agency", credits=100)
        emps = s.get("/v1/employees?limit=100", key=key).json["employees"]
        mgr = [e for e in emps if e["tier"] == "manager"][0]["id"]
        path = "/v1/employees/" + mgr
        before = self.warm(path, key, "answers")
        self.assertEqual(before["tier"], "manager")
        p = s.cli("employees", "update", mgr, "--tier", "starter")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.within_bound(lambda: s.get(path, key=key).json["tier"] == "starter",
                          "the employee's new tier in its detail")
        # this server's own writes: the next answer has them
        self.warm(path, key, "answers")
        self.assertJson(s.patch(path, {"description": "Patched"}, key=key))
        self.assertEqual(s.get(path, key=key).json["description"], "Patched")
        r = s.post("/v1/chat", {"employee_id": mgr, "message": "hello"}, key=key)
        self.assertEqual(r.status, 200, r)
        conv = r.json["conversation_id"]
        # a rating moves the satisfaction score in the very next answer
        msg = r.json["id"]
        self.assertIsNone(before["stats"]["satisfaction_score"])
        r = s.post("/v1/conversations/%s/messages/%s/feedback" % (conv, msg), {"rating": 4},
                   key=key)
        self.assertJson(r)
        self.assertEqual(s.get(path, key=key).json["stats"]["satisfaction_score"], 4)

    def test_own_writes_are_seen_at_once(self):
        s = self.server
        key = s.create_key("cache-own", tier="agency", credits=100)
        page = self.warm("/v1/employees?limit=100", key, "answers")
        one = page["employees"][0]["id"]
        r = s.patch("/v1/employees/" + one, {"name": "Renamed By Patch"}, key=key)
        self.assertJson(r)
        items = s.get("/v1/employees?limit=100", key=key).json["employees"]
        self.assertEqual([e["name"] for e in items if e["id"] == one], ["Renamed By Patch"])
        r = s.post("/v1/employees", {"name": "Newly Hired", "role": "R", "category": "sales"},
                   key=key)
        new = self.assertJson(r)["id"]
        after = s.get("/v1/employees?limit=100", key=key).json
        self.assertEqual(after["total"], page["total"] + 1)
        self.assertIn(new, [e["id"] for e in after["employees"]])
        # the account's credits after a charged chat: the next request shows the charge
        before = s.get("/v1/account", key=key).json["credits_remaining"]
        r = s.post("/v1/chat", {"employee_id": one, "message": "hello"}, key=key)
        self.assertEqual(r.status, 200, r)
        charged = r.json["credits_used"]
        self.assertGreater(charged, 0)
        self.assertEqual(s.get("/v1/account", key=key).json["credits_remaining"],
                         before - charged)

    def test_tenants_never_share_a_page(self):
        s = self.server
        a_live = s.create_key("cache-tenant-a", tier="agency")
        a_test = s.create_key("cache-tenant-a", mode="test")
        b_live = s.create_key("cache-tenant-b", tier="agency")
        made = {}
        for name, key in (("A live", a_live), ("A test", a_test), ("B live", b_live)):
            r = s.post("/v1/employees", {"name": "Only " + name, "role": "R",
                                         "category": "sales"}, key=key)
            made[name] = self.assertJson(r)["id"]
        for query in ("?limit=100", "?limit=100&category=sales", "?limit=3"):
            pages = {}
            for _ in range(3):  # the second and third answers come from the cache
                for name, key in (("A live", a_live), ("A test", a_test), ("B live", b_live)):
                    pages[name] = s.get("/v1/employees" + query, key=key).json
            for name in made:
                ids = [e["id"] for e in pages[name]["employees"]]
                for other, oid in made.items():
                    if other != name:
                        self.assertNotIn(oid, ids, "%s sees %s's employee (%s)"
                                         % (name, other, query))
                if query != "?limit=3":
                    self.assertIn(made[name], ids)
            ids = {n: {e["id"] for e in p["employees"]} for n, p in pages.items()}
            self.assertFalse(ids["A live"] & ids["B live"])
            self.assertFalse(ids["A live"] & ids["A test"])
        # a detail answered (and kept) for its owner is never another tenant's
        for _ in range(3):
            self.assertJson(s.get("/v1/employees/" + made["A live"], key=a_live))
        for other in (a_test, b_live):
            r = s.get("/v1/employees/" + made["A live"], key=other)
            self.assertError(r, 404, "employee_not_found", "id")


if __name__ == "__main__":
    import unittest
    unittest.main()
