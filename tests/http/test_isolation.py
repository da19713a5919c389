# SPDX-License-Identifier: MIT
"""Tenant isolation: other organizations' employees are 404 (never 403), and live and test keys
of one organization see disjoint data (each mode has its own copy of the catalog)."""

from harness import ID_PARAM, ServerTestCase

NEW = {"name": "Isolated Iris", "role": "Recruiter", "category": "hr"}
CREATED = {"Isolated Iris", "Hijacked", "Sandbox Sid", "Production Pia"}


class IsolationTest(ServerTestCase):

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.a_live = s.create_key("iso-a", tier="agency")
        cls.a_test = s.create_key("iso-a", mode="test")
        cls.b_live = s.create_key("iso-b", tier="agency")
        cls.b_test = s.create_key("iso-b", mode="test")

    def all_items(self, key):
        items, after = [], None
        while True:
            path = "/v1/employees?limit=100" + ("&after=" + after if after else "")
            body = self.assertJson(self.server.get(path, key=key))
            items += body["employees"]
            if not body["has_more"]:
                return items
            after = body["next_cursor"]

    def create(self, key, **kw):
        return self.assertJson(self.server.post("/v1/employees", dict(NEW, **kw), key=key))

    def assertInvisible(self, eid, key):
        for method, path, body in (("GET", "/v1/employees/" + eid, None),
                                   ("GET", "/v1/employees/%s/stats" % eid, None),
                                   ("GET", "/v1/employees/%s/stats?period=24h" % eid, None),
                                   ("PATCH", "/v1/employees/" + eid, {"status": "offline"}),
                                   ("PATCH", "/v1/employees/" + eid, {"name": "Hijacked"})):
            with self.subTest(method=method, path=path):
                r = self.server.request(method, path, key=key, json_body=body)
                self.assertError(r, 404, "employee_not_found", ID_PARAM)
        self.assertNotIn(eid, [e["id"] for e in self.all_items(key)])

    def test_catalog_per_org_and_mode(self):
        cats = {name: self.all_items(k) for name, k in (("a_live", self.a_live),
                                                        ("a_test", self.a_test),
                                                        ("b_live", self.b_live),
                                                        ("b_test", self.b_test))}
        shipped = lambda items: sorted((e["name"], e["role"], e["category"], e["tier"])
                                       for e in items if e["name"] not in CREATED)
        ref = shipped(cats["a_live"])
        self.assertGreaterEqual(len(ref), 8)
        ids = set()
        for name, items in cats.items():
            with self.subTest(view=name):
                self.assertEqual(shipped(items), ref, "the same catalog in every org and mode")
                mine = {e["id"] for e in items}
                self.assertFalse(mine & ids, "employee ids are shared between views")
                ids |= mine

    def test_other_org_is_404(self):
        a_cat = self.all_items(self.a_live)[0]["id"]
        a_new = self.create(self.a_live)["id"]
        for eid in (a_cat, a_new):
            for key in (self.b_live, self.b_test):
                self.assertInvisible(eid, key)
        # Still intact for the owner.
        for eid in (a_cat, a_new):
            d = self.assertJson(self.server.get("/v1/employees/" + eid, key=self.a_live))
            self.assertEqual(d["status"], "idle")
            self.assertNotEqual(d["name"], "Hijacked")

    def test_live_and_test_are_disjoint(self):
        live_cat = self.all_items(self.a_live)[0]["id"]
        test_cat = self.all_items(self.a_test)[0]["id"]
        self.assertNotEqual(live_cat, test_cat)
        self.assertInvisible(live_cat, self.a_test)
        self.assertInvisible(test_cat, self.a_live)

    def test_created_in_test_mode_stays_there(self):
        live_before = self.all_items(self.a_live)
        e = self.create(self.a_test, name="Sandbox Sid")
        self.assertIn(e["id"], [x["id"] for x in self.all_items(self.a_test)])
        live_after = self.all_items(self.a_live)
        self.assertEqual(live_after, live_before)
        self.assertNotIn("Sandbox Sid", [x["name"] for x in live_after])
        self.assertInvisible(e["id"], self.a_live)
        self.assertInvisible(e["id"], self.b_test)
        self.assertInvisible(e["id"], self.b_live)
        # and the other way round
        test_before = self.all_items(self.a_test)
        e = self.create(self.a_live, name="Production Pia")
        self.assertEqual(self.all_items(self.a_test), test_before)
        self.assertInvisible(e["id"], self.a_test)

    def test_offline_in_one_mode_only(self):
        live = self.all_items(self.a_live)
        test = self.all_items(self.a_test)
        pairs = [(e, t) for e in live if e["name"] not in CREATED for t in test
                 if (t["name"], t["role"]) == (e["name"], e["role"])]
        self.assertTrue(pairs, "the catalog exists in both modes")
        target, twin = pairs[-1]
        self.assertJson(self.server.patch("/v1/employees/" + target["id"],
                                          {"status": "offline"}, key=self.a_live))
        try:
            d = self.assertJson(self.server.get("/v1/employees/" + twin["id"],
                                                key=self.a_test))
            self.assertEqual(d["status"], "idle")
            body = self.assertJson(self.server.get("/v1/employees?status=offline",
                                                   key=self.a_test))
            self.assertEqual(body["total"], 0)
            body = self.assertJson(self.server.get("/v1/employees?status=offline",
                                                   key=self.b_live))
            self.assertEqual(body["total"], 0)
        finally:
            self.server.patch("/v1/employees/" + target["id"], {"status": "idle"},
                              key=self.a_live)
