# SPDX-License-Identifier: MIT
"""Employees: the shipped catalog, list/detail shapes, filters, keyset pagination, create and
update (with every validation rule of issue 2), and the statistics endpoint."""

import time
import urllib.parse

from harness import (ID_PARAM, CAPABILITY_RE, CATEGORIES, DETAIL_FIELDS, DETAIL_STATS_FIELDS, EMP_ID_RE,
                     EMP_TIERS, LIST_ITEM_FIELDS, SERIES_FIELDS, STATS_FIELDS, TS_RE,
                     ServerTestCase, parse_ts)

LIST_FIELDS = {"employees", "total", "has_more", "next_cursor"}


def order_key(e):
    return (e["name"].encode("utf-8"), e["id"].encode("utf-8"))


class EmployeesBase(ServerTestCase):

    def list(self, key, **query):
        q = urllib.parse.urlencode(query)
        r = self.server.get("/v1/employees" + ("?" + q if q else ""), key=key)
        body = self.assertJson(r, 200)
        self.assertEqual(set(body), LIST_FIELDS, body)
        return body

    def walk(self, key, limit, **query):
        """All pages with 'limit'; checks page invariants; returns the items in order."""
        items, totals, after, pages = [], set(), None, 0
        while True:
            q = dict(query, limit=limit)
            if after is not None:
                q["after"] = after
            body = self.list(key, **q)
            pages += 1
            self.assertLessEqual(len(body["employees"]), limit)
            totals.add(body["total"])
            items += body["employees"]
            if body["has_more"]:
                self.assertIsInstance(body["next_cursor"], str)
                self.assertTrue(body["next_cursor"])
                self.assertEqual(len(body["employees"]), limit)
                after = body["next_cursor"]
            else:
                self.assertIsNone(body["next_cursor"])
                break
            self.assertLess(pages, 500, "pagination does not end")
        self.assertEqual(len(totals), 1, "total changed while paging: %s" % totals)
        self.assertEqual(totals.pop(), len(items))
        return items

    def full_list(self, key, **query):
        return self.walk(key, 100, **query)

    def check_item(self, e):
        self.assertEqual(set(e), LIST_ITEM_FIELDS, e)
        self.assertRegex(e["id"], EMP_ID_RE)
        self.assertIsInstance(e["name"], str)
        self.assertIsInstance(e["role"], str)
        self.assertIn(e["category"], CATEGORIES)
        self.assertIn(e["status"], ("active", "idle", "offline"))
        self.assertIn(e["tier"], EMP_TIERS)
        self.assertIsInstance(e["capabilities"], list)
        for c in e["capabilities"]:
            self.assertRegex(c, CAPABILITY_RE)

    def check_detail(self, d):
        self.assertEqual(set(d), DETAIL_FIELDS, d)
        self.check_item({k: d[k] for k in LIST_ITEM_FIELDS})
        self.assertIsInstance(d["description"], str)
        self.assertEqual(set(d["stats"]), DETAIL_STATS_FIELDS, d)
        self.assertRegex(d["created_at"], TS_RE)

    def check_fresh_stats(self, d):
        self.assertEqual(d["stats"], {"tasks_completed_today": 0, "avg_response_time_ms": 0,
                                      "satisfaction_score": None})


class CatalogTest(EmployeesBase):
    """A pristine organization: nothing here writes."""

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("cat-org")

    def test_catalog(self):
        items = self.full_list(self.key)
        self.assertGreaterEqual(len(items), 8)
        for e in items:
            with self.subTest(id=e["id"]):
                self.check_item(e)
                self.assertEqual(e["status"], "idle", "a new catalog is all idle")
                self.assertTrue(e["name"] and e["role"])
                self.assertGreaterEqual(len(e["capabilities"]), 1)
                self.assertEqual(len(set(e["capabilities"])), len(e["capabilities"]))
        self.assertEqual(len({e["id"] for e in items}), len(items))
        self.assertGreaterEqual(len({e["category"] for e in items}), 5)
        self.assertEqual({e["tier"] for e in items}, {"starter", "manager"})

    def test_single_page(self):
        body = self.list(self.key, limit=100)
        self.assertLessEqual(body["total"], 100)
        self.assertEqual(len(body["employees"]), body["total"])
        self.assertFalse(body["has_more"])
        self.assertIsNone(body["next_cursor"])

    def test_default_limit(self):
        body = self.list(self.key)
        self.assertEqual(len(body["employees"]), min(50, body["total"]))
        self.assertEqual(body["has_more"], body["total"] > 50)

    def test_order_name_then_id(self):
        items = self.full_list(self.key)
        self.assertEqual(items, sorted(items, key=order_key))

    def test_detail_matches_list(self):
        for e in self.full_list(self.key):
            with self.subTest(id=e["id"]):
                r = self.server.get("/v1/employees/" + e["id"], key=self.key)
                d = self.assertJson(r)
                self.check_detail(d)
                self.assertEqual({k: d[k] for k in LIST_ITEM_FIELDS}, e)
                self.check_fresh_stats(d)
                self.assertLessEqual(parse_ts(d["created_at"]), time.time() + 5)

    def test_filter_category(self):
        items = self.full_list(self.key)
        for c in CATEGORIES:
            with self.subTest(category=c):
                want = [e for e in items if e["category"] == c]
                body = self.list(self.key, category=c, limit=100)
                self.assertEqual(body["employees"], want)
                self.assertEqual(body["total"], len(want))
                self.assertFalse(body["has_more"])

    def test_filter_status(self):
        items = self.full_list(self.key)
        for st in ("active", "idle", "offline"):
            with self.subTest(status=st):
                want = [e for e in items if e["status"] == st]
                body = self.list(self.key, status=st, limit=100)
                self.assertEqual(body["employees"], want)
                self.assertEqual(body["total"], len(want))
        body = self.list(self.key, status="offline")
        self.assertEqual((body["employees"], body["total"], body["has_more"],
                          body["next_cursor"]), ([], 0, False, None))

    def test_filter_both(self):
        items = self.full_list(self.key)
        c = items[0]["category"]
        body = self.list(self.key, category=c, status="idle", limit=100)
        self.assertEqual(body["employees"], [e for e in items if e["category"] == c])
        body = self.list(self.key, category=c, status="offline", limit=100)
        self.assertEqual(body["total"], 0)

    def test_bad_filter_values(self):
        for param, values in (("category", ["legal", "Sales", "", "sales ", "all"]),
                              ("status", ["busy", "IDLE", "", "deleted", "idle,offline"])):
            for v in values:
                with self.subTest(param=param, value=v):
                    r = self.server.get("/v1/employees?" + urllib.parse.urlencode({param: v}),
                                        key=self.key)
                    self.assertError(r, 400, "invalid_request", param)

    def test_pagination_walk(self):
        full = self.full_list(self.key)
        for limit in (1, 2, 3, 7):
            with self.subTest(limit=limit):
                self.assertEqual(self.walk(self.key, limit), full)

    def test_pagination_with_filter(self):
        full = self.full_list(self.key)
        counts = {}
        for e in full:
            counts[e["category"]] = counts.get(e["category"], 0) + 1
        c = max(counts, key=counts.get)
        self.assertEqual(self.walk(self.key, 1, category=c),
                         [e for e in full if e["category"] == c])

    def test_limit_3_first_page(self):
        body = self.list(self.key, limit=3)
        self.assertEqual(len(body["employees"]), 3)
        self.assertTrue(body["has_more"])
        self.assertIsInstance(body["next_cursor"], str)

    def test_unknown_employee(self):
        for eid in ("emp_nosuchemployee00000000", "emp_", "garbage", "x" * 300,
                    "emp_%20", "EMP_ABC"):
            for suffix in ("", "/stats"):
                with self.subTest(id=eid, suffix=suffix):
                    r = self.server.get("/v1/employees/" + eid + suffix, key=self.key)
                    self.assertError(r, 404, "employee_not_found", ID_PARAM)


VALID = {"name": "Quinn Ledger", "role": "Bookkeeper", "category": "finance"}


class CreateTest(EmployeesBase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("emp-create", tier="agency")

    def post(self, body):
        return self.server.post("/v1/employees", body, key=self.key)

    def test_create_minimal(self):
        before = self.list(self.key, limit=1)["total"]
        t0 = time.time()
        d = self.assertJson(self.post(dict(VALID, name="Minimal Mia")))
        self.check_detail(d)
        self.assertEqual((d["name"], d["role"], d["category"]),
                         ("Minimal Mia", "Bookkeeper", "finance"))
        self.assertEqual(d["tier"], "starter")
        self.assertEqual(d["capabilities"], [])
        self.assertEqual(d["description"], "")
        self.assertEqual(d["status"], "idle")
        self.check_fresh_stats(d)
        self.assertAlmostEqual(parse_ts(d["created_at"]), t0, delta=30)
        r = self.server.get("/v1/employees/" + d["id"], key=self.key)
        self.assertEqual(self.assertJson(r), d)
        items = self.full_list(self.key)
        self.assertEqual(len(items), before + 1)
        self.assertIn({k: d[k] for k in LIST_ITEM_FIELDS}, items)
        self.assertEqual(items, sorted(items, key=order_key))

    def test_create_full(self):
        body = {"name": "Full Fred", "role": "Site Reliability", "category": "engineering",
                "capabilities": ["code_review", "incident_triage", "x9_y"],
                "description": "Keeps things up.", "instructions": "Be calm.",
                "model": "gpt-4o-mini", "status": "offline"}
        d = self.assertJson(self.post(body))
        self.check_detail(d)
        for k in ("name", "role", "category", "capabilities", "description", "status"):
            self.assertEqual(d[k], body[k], k)
        self.assertEqual(d["tier"], "starter")
        self.assertNotIn("instructions", d)
        self.assertNotIn("model", d)
        self.assertIn(d["id"], [e["id"] for e in self.list(self.key, status="offline")
                                ["employees"]])

    def test_create_each_category(self):
        for c in CATEGORIES:
            with self.subTest(category=c):
                d = self.assertJson(self.post(dict(VALID, category=c)))
                self.assertEqual((d["category"], d["tier"]), (c, "starter"))

    def test_ids_unique_same_name(self):
        a = self.assertJson(self.post(dict(VALID, name="Twin")))
        b = self.assertJson(self.post(dict(VALID, name="Twin")))
        self.assertNotEqual(a["id"], b["id"])
        twins = [e for e in self.full_list(self.key) if e["name"] == "Twin"]
        self.assertEqual([e["id"] for e in twins], sorted([a["id"], b["id"]]))

    def test_boundaries_accepted(self):
        caps32 = ["c%02d" % i for i in range(32)]
        cases = [
            {"name": "n" * 100},
            {"name": "é" * 100},
            {"name": "A"},
            {"role": "r" * 100},
            {"role": "R"},
            {"capabilities": caps32},
            {"capabilities": ["a" + "b" * 63]},
            {"capabilities": ["a"]},
            {"capabilities": ["a_1", "z9"]},
            {"capabilities": []},
            {"description": "d" * 2000},
            {"description": ""},
            {"instructions": "i" * 20000},
            {"instructions": ""},
            {"model": "m" * 200},
            {"model": "x"},
            {"model": None},
            {"status": "idle"},
            {"status": "offline"},
        ]
        for extra in cases:
            with self.subTest(extra={k: (v[:20] if isinstance(v, str) else v)
                                     for k, v in extra.items()}):
                d = self.assertJson(self.post(dict(VALID, **extra)))
                for k, v in extra.items():
                    if k in d:
                        self.assertEqual(d[k], v)

    def test_validation(self):
        caps33 = ["c%02d" % i for i in range(33)]
        cases = [
            ({"name": None}, "name"),
            ({"role": None}, "role"),
            ({"category": None}, "category"),
            ({"name": ""}, "name"),
            ({"name": "n" * 101}, "name"),
            ({"name": "é" * 101}, "name"),
            ({"role": ""}, "role"),
            ({"role": "r" * 101}, "role"),
            ({"category": "legal"}, "category"),
            ({"category": "Sales"}, "category"),
            ({"category": ""}, "category"),
            ({"tier": "agency"}, "tier"),
            ({"tier": ""}, "tier"),
            ({"tier": None}, "tier"),
            ({"tier": "starter"}, "tier"),
            ({"tier": "manager"}, "tier"),
            ({"capabilities": caps33}, "capabilities"),
            ({"capabilities": None}, "capabilities"),
            ({"capabilities": ["dup", "dup"]}, {"capabilities", "capabilities[1]"}),
            ({"capabilities": ["a", "b", "a"]}, {"capabilities", "capabilities[2]"}),
            ({"capabilities": [""]}, "capabilities[0]"),
            ({"capabilities": ["1abc"]}, "capabilities[0]"),
            ({"capabilities": ["ok", "a-b"]}, "capabilities[1]"),
            ({"capabilities": ["ok", "fine", "a" * 65]}, "capabilities[2]"),
            ({"capabilities": ["Abc"]}, "capabilities[0]"),
            ({"capabilities": ["ab c"]}, "capabilities[0]"),
            ({"capabilities": ["_x"]}, "capabilities[0]"),
            ({"capabilities": ["é"]}, "capabilities[0]"),
            ({"capabilities": [1]}, "capabilities[0]"),
            ({"description": "d" * 2001}, "description"),
            ({"description": None}, "description"),
            ({"instructions": "i" * 20001}, "instructions"),
            ({"model": ""}, "model"),
            ({"model": "m" * 201}, "model"),
            ({"status": "active"}, "status"),
            ({"status": "busy"}, "status"),
            ({"status": ""}, "status"),
            ({"status": None}, "status"),
            ({"created_at": "2026-01-01T00:00:00.000Z"}, "created_at"),
        ]
        before = self.list(self.key, limit=1)["total"]
        for extra, param in cases:
            with self.subTest(extra={k: (v[:20] if isinstance(v, str) else v)
                                     for k, v in extra.items()}):
                r = self.post(dict(VALID, **extra))
                self.assertError(r, 400, "invalid_request", param)
        for missing in ("name", "role", "category"):
            with self.subTest(missing=missing):
                body = {k: v for k, v in VALID.items() if k != missing}
                self.assertError(self.post(body), 400, "invalid_request", missing)
        self.assertEqual(self.list(self.key, limit=1)["total"], before,
                         "a refused create must not store anything")


class PatchTest(EmployeesBase):

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("emp-patch", tier="agency")

    def new(self, **kw):
        r = self.server.post("/v1/employees", dict(VALID, **kw), key=self.key)
        return self.assertJson(r)

    def patch(self, eid, body):
        return self.server.patch("/v1/employees/" + eid, body, key=self.key)

    def ids(self, **query):
        return [e["id"] for e in self.full_list(self.key, **query)]

    def test_status_offline_and_back(self):
        e = self.new(name="Status Sam")
        d = self.assertJson(self.patch(e["id"], {"status": "offline"}))
        self.check_detail(d)
        self.assertEqual(d["status"], "offline")
        self.assertEqual(self.assertJson(self.server.get("/v1/employees/" + e["id"],
                                                         key=self.key))["status"], "offline")
        self.assertIn(e["id"], self.ids(status="offline"))
        self.assertNotIn(e["id"], self.ids(status="idle"))
        d = self.assertJson(self.patch(e["id"], {"status": "idle"}))
        self.assertEqual(d["status"], "idle")
        self.assertNotIn(e["id"], self.ids(status="offline"))
        self.assertIn(e["id"], self.ids(status="idle"))

    def test_catalog_employee_offline(self):
        first = self.full_list(self.key)[0]
        d = self.assertJson(self.patch(first["id"], {"status": "offline"}))
        self.assertEqual(d["status"], "offline")
        body = self.list(self.key, status="offline", category=first["category"], limit=100)
        self.assertIn(first["id"], [x["id"] for x in body["employees"]])
        self.assertJson(self.patch(first["id"], {"status": "idle"}))

    def test_status_active_refused(self):
        e = self.new(name="Active Al")
        for v in ("active", "busy", "", None, 1, "OFFLINE"):
            with self.subTest(status=v):
                self.assertError(self.patch(e["id"], {"status": v}), 400, "invalid_request",
                                 "status")
        d = self.assertJson(self.server.get("/v1/employees/" + e["id"], key=self.key))
        self.assertEqual(d["status"], "idle")

    def test_update_fields(self):
        e = self.new(name="Before Bea", capabilities=["one"], description="old")
        upd = {"name": "After Bea", "role": "Closer", "category": "sales",
               "capabilities": ["lead_scoring", "crm_sync"], "description": "new",
               "instructions": "Sell.", "model": "m1"}
        d = self.assertJson(self.patch(e["id"], upd))
        self.check_detail(d)
        self.assertEqual(d["id"], e["id"])
        self.assertEqual(d["created_at"], e["created_at"])
        for k in ("name", "role", "category", "capabilities", "description"):
            self.assertEqual(d[k], upd[k], k)
        self.assertEqual(d["tier"], "starter")
        self.assertEqual(d["status"], "idle")
        g = self.assertJson(self.server.get("/v1/employees/" + e["id"], key=self.key))
        self.assertEqual(g, d)
        items = self.full_list(self.key)
        self.assertEqual(items, sorted(items, key=order_key))
        self.assertIn({k: d[k] for k in LIST_ITEM_FIELDS}, items)

    def test_partial_update_keeps_other_fields(self):
        e = self.new(name="Partial Pat", capabilities=["keep_me"], description="kept")
        d = self.assertJson(self.patch(e["id"], {"role": "New Role"}))
        self.assertEqual(d["role"], "New Role")
        for k in ("name", "category", "tier", "capabilities", "description", "status",
                  "created_at"):
            self.assertEqual(d[k], e[k], k)
        d = self.assertJson(self.patch(e["id"], {}))
        self.assertEqual(d["role"], "New Role")
        d = self.assertJson(self.patch(e["id"], {"capabilities": []}))
        self.assertEqual(d["capabilities"], [])
        d = self.assertJson(self.patch(e["id"], {"model": None}))
        self.assertEqual(d["name"], "Partial Pat")

    def test_patch_validation(self):
        e = self.new(name="Valid Val")
        cases = [
            ({"name": ""}, "name"),
            ({"name": None}, "name"),
            ({"name": "n" * 101}, "name"),
            ({"role": None}, "role"),
            ({"category": "legal"}, "category"),
            ({"tier": "agency"}, "tier"),
            ({"capabilities": ["ok", "Nope"]}, "capabilities[1]"),
            ({"capabilities": ["c%02d" % i for i in range(33)]}, "capabilities"),
            ({"description": "d" * 2001}, "description"),
            ({"instructions": "i" * 20001}, "instructions"),
            ({"model": ""}, "model"),
            ({"id": "emp_other"}, "id"),
            ({"created_at": "2026-01-01T00:00:00.000Z"}, "created_at"),
            ({"unknown": True}, "unknown"),
        ]
        for body, param in cases:
            with self.subTest(body={k: (v[:20] if isinstance(v, str) else v)
                                    for k, v in body.items()}):
                self.assertError(self.patch(e["id"], body), 400, "invalid_request", param)
        d = self.assertJson(self.server.get("/v1/employees/" + e["id"], key=self.key))
        self.assertEqual(d, e, "refused updates must change nothing")

    def test_patch_unknown(self):
        for eid in ("emp_nosuchemployee00000000", "nope"):
            with self.subTest(id=eid):
                self.assertError(self.patch(eid, {"status": "offline"}), 404,
                                 "employee_not_found", ID_PARAM)


class StatsTest(EmployeesBase):

    PERIODS = {"24h": (24, 3600), "7d": (7, 86400), "30d": (30, 86400), "90d": (90, 86400)}

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("emp-stats", tier="agency")
        cls.catalog_id = cls.server.get("/v1/employees?limit=1",
                                        key=cls.key).json["employees"][0]["id"]
        r = cls.server.post("/v1/employees", dict(VALID, name="Stats Stu"), key=cls.key)
        cls.new_id = r.json["id"]

    def stats(self, eid, period=None):
        path = "/v1/employees/%s/stats" % eid
        if period is not None:
            path += "?period=" + period
        return self.server.get(path, key=self.key)

    def check_stats(self, eid, period, body):
        n, step = self.PERIODS[period]
        self.assertEqual(set(body), STATS_FIELDS, body)
        self.assertEqual(body["employee_id"], eid)
        self.assertEqual(body["period"], period)
        for k in ("messages", "conversations", "tasks_completed", "tasks_failed",
                  "workflow_steps", "avg_response_time_ms", "p95_response_time_ms",
                  "credits_used", "ratings"):
            self.assertEqual(body[k], 0, k)
            self.assertIs(type(body[k]), int, k)
        self.assertIsNone(body["satisfaction_score"])
        self.assertRegex(body["from"], TS_RE)
        self.assertRegex(body["to"], TS_RE)
        now = time.time()
        to = parse_ts(body["to"])
        self.assertAlmostEqual(to, now, delta=10)
        series = body["series"]
        self.assertEqual(len(series), n)
        starts = []
        for b in series:
            self.assertEqual(set(b), SERIES_FIELDS, b)
            self.assertRegex(b["start"], TS_RE)
            self.assertEqual((b["messages"], b["tasks_completed"], b["credits_used"]), (0, 0, 0))
            starts.append(parse_ts(b["start"]))
        self.assertEqual(body["from"], series[0]["start"])
        for s in starts:
            self.assertEqual(s % step, 0, "buckets are UTC aligned")
        for a, b in zip(starts, starts[1:]):
            self.assertEqual(b - a, step)
        self.assertLessEqual(starts[-1], to)
        self.assertLess(to, starts[-1] + step, "the last bucket holds 'to'")

    def test_periods(self):
        for eid in (self.catalog_id, self.new_id):
            for period in self.PERIODS:
                with self.subTest(id=eid, period=period):
                    self.check_stats(eid, period, self.assertJson(self.stats(eid, period)))

    def test_default_period(self):
        self.check_stats(self.new_id, "7d", self.assertJson(self.stats(self.new_id)))

    def test_bad_period(self):
        for p in ("1y", "7D", "", "24H", "7", "week", "1d", "12h", "7d%20", "%207d"):
            with self.subTest(period=p):
                self.assertError(self.stats(self.new_id, p), 400, "invalid_request", "period")

    def test_unknown_employee(self):
        for p in (None, "24h"):
            self.assertError(self.stats("emp_nosuchemployee00000000", p), 404,
                             "employee_not_found", ID_PARAM)

    def test_offline_employee_has_stats(self):
        r = self.server.patch("/v1/employees/" + self.new_id, {"status": "offline"},
                              key=self.key)
        self.assertJson(r)
        try:
            self.check_stats(self.new_id, "30d", self.assertJson(self.stats(self.new_id, "30d")))
        finally:
            self.server.patch("/v1/employees/" + self.new_id, {"status": "idle"}, key=self.key)
