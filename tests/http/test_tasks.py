# SPDX-License-Identifier: MIT
"""Tasks (issue 5, contract §10, /work/spec-issue5.md): create with every field and every
validation rule, the Task and run records, list filters and the `before` cursor, PATCH (fields,
status transitions, cancellation), DELETE, execution by the worker pool (builtin engine for test
keys, the openai engine against tests/mock/openai_mock.py for live keys), priority order with one
worker, offline employees, credits, engine failures, recurring schedules, kill -9 and restart,
employee statistics and tenant isolation.

TaskRecurringSlowTest waits for a real clock minute (up to ~75 s)."""

import calendar
import datetime
import json
import math
import re
import time
import unittest
import urllib.parse

from chatlib import ChatTestCase, MockChatTestCase, uniq
from harness import EMP_ID_RE, TS_RE, next_millisecond, parse_ts

TASK_ID_RE = r"^task_[A-Za-z0-9]{20,}$"
RUN_ID_RE = r"^trun_[A-Za-z0-9]{20,}$"  # contract §1 and docs/openapi.json (TaskRunId)
TASK_FIELDS = {"id", "employee_id", "title", "description", "status", "priority", "due_at",
               "recurring", "next_run_at", "last_run_at", "run_count", "result", "error",
               "credits_used", "created_at", "updated_at", "started_at", "completed_at"}
STOP_REASONS = (None, "completed", "max_steps", "repeated_call", "timeout",
                "insufficient_credits")
RUN_FIELDS = {"id", "status", "started_at", "completed_at", "result", "error", "credits_used",
              "stop_reason", "tool_calls"}
TASK_LIST_FIELDS = {"tasks", "has_more", "next_cursor"}
RUN_LIST_FIELDS = {"runs", "has_more", "next_cursor"}
TASK_STATUSES = ("pending", "in_progress", "completed", "failed")
RUN_STATUSES = ("in_progress", "completed", "failed", "cancelled")
PRIORITIES = ("low", "medium", "high", "urgent")
FREQUENCIES = ("daily", "weekdays", "weekly", "monthly")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NO_TASK = "task_" + "Z" * 24
NO_EMP = "emp_" + "Z" * 24
UTC = datetime.timezone.utc


# ---- calendar helpers (the expected schedule, computed independently of the server) ----

def iso(ts):
    """A Unix time in seconds as the contract's timestamp (milliseconds, Z)."""
    ms = int(round(ts * 1000))
    dt = datetime.datetime.fromtimestamp(ms // 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (ms % 1000)


def hhmm(ts):
    return time.strftime("%H:%M", time.gmtime(ts))


def rule_matches(rule, d):
    f = rule["frequency"]
    if f == "daily":
        return True
    if f == "weekdays":
        return d.weekday() < 5
    if f == "weekly":
        return d.weekday() == WEEKDAYS.index(rule["day"])
    last = calendar.monthrange(d.year, d.month)[1]
    return d.day == min(int(rule["day"]), last)


def expected_next(rule, now):
    """The first occurrence of 'rule' strictly after Unix time 'now' (seconds), as Unix time."""
    h, m = (int(x) for x in rule["time"].split(":"))
    d0 = datetime.datetime.fromtimestamp(now, UTC).date()
    for i in range(0, 400):
        d = d0 + datetime.timedelta(days=i)
        slot = datetime.datetime(d.year, d.month, d.day, h, m, tzinfo=UTC).timestamp()
        if slot > now and rule_matches(rule, d):
            return slot
    raise AssertionError("no occurrence of %r" % (rule,))


def canonical(rule):
    """The rule as the server must echo it: frequency, day (weekly/monthly only), time."""
    out = {"frequency": rule["frequency"]}
    if "day" in rule:
        out["day"] = rule["day"]
    out["time"] = rule["time"]
    return out


def credits_of(usage):
    """max(1, ceil(tokens / 1000)) of a mock reply's usage."""
    return max(1, math.ceil((usage["prompt_tokens"] + usage["completion_tokens"]) / 1000))


# ---- helpers shared by the task suites ----

# runner_passed(): witnesses made at once (see there).
WITNESSES = 4


class TaskHelpers:
    """Mixed into ChatTestCase / MockChatTestCase."""

    def new_org(self, prefix="tk"):
        return uniq(prefix)

    # -- requests --

    def create(self, key, employee_id, title, **fields):
        body = {"employee_id": employee_id, "title": title}
        body.update(fields)
        return self.server.post("/v1/tasks", body, key=key)

    def create_ok(self, key, employee_id, title, **fields):
        t = self.assertJson(self.create(key, employee_id, title, **fields))
        self.checkTask(t)
        self.assertEqual(t["employee_id"], employee_id)
        self.assertEqual(t["title"], title)
        return t

    def get_task(self, key, tid):
        t = self.assertJson(self.server.get("/v1/tasks/" + tid, key=key))
        self.checkTask(t)
        return t

    def patch_task(self, key, tid, body):
        return self.server.patch("/v1/tasks/" + tid, body, key=key)

    def patch_ok(self, key, tid, body):
        t = self.assertJson(self.patch_task(key, tid, body))
        self.checkTask(t)
        self.assertEqual(t["id"], tid)
        return t

    def delete_task(self, key, tid):
        return self.server.request("DELETE", "/v1/tasks/" + tid, key=key)

    def list_tasks(self, key, **query):
        q = urllib.parse.urlencode(query)
        body = self.assertJson(self.server.get("/v1/tasks" + ("?" + q if q else ""), key=key))
        self.assertEqual(set(body), TASK_LIST_FIELDS, body)
        self.assertIsInstance(body["tasks"], list)
        self.assertIsInstance(body["has_more"], bool)
        for t in body["tasks"]:
            self.checkTask(t)
        return body

    def walk_tasks(self, key, limit, **query):
        """Every page newest first with 'limit'; checks the page invariants; (items, sizes)."""
        items, sizes, before = [], [], None
        for _ in range(500):
            q = dict(query, limit=limit)
            if before is not None:
                q["before"] = before
            body = self.list_tasks(key, **q)
            self.assertLessEqual(len(body["tasks"]), limit)
            items += body["tasks"]
            sizes.append(len(body["tasks"]))
            if body["has_more"]:
                self.assertIsInstance(body["next_cursor"], str)
                self.assertTrue(body["next_cursor"])
                self.assertEqual(len(body["tasks"]), limit)
                before = body["next_cursor"]
            else:
                self.assertIsNone(body["next_cursor"])
                ids = [t["id"] for t in items]
                self.assertEqual(len(ids), len(set(ids)), "a task was listed twice")
                return items, sizes
        self.fail("pagination does not end")

    def all_task_ids(self, key, **query):
        return [t["id"] for t in self.walk_tasks(key, 100, **query)[0]]

    def runs_page(self, key, tid, **query):
        q = urllib.parse.urlencode(query)
        body = self.assertJson(self.server.get("/v1/tasks/%s/runs%s" % (tid, "?" + q if q else ""),
                                               key=key))
        self.assertEqual(set(body), RUN_LIST_FIELDS, body)
        self.assertIsInstance(body["runs"], list)
        self.assertIsInstance(body["has_more"], bool)
        for r in body["runs"]:
            self.checkRun(r)
        return body

    def runs(self, key, tid):
        """All runs of a task, newest first (walked with limit 100)."""
        items, before = [], None
        for _ in range(100):
            q = {"limit": 100}
            if before:
                q["before"] = before
            body = self.runs_page(key, tid, **q)
            items += body["runs"]
            if not body["has_more"]:
                self.assertIsNone(body["next_cursor"])
                return items
            before = body["next_cursor"]
        self.fail("run pagination does not end")

    def emp_detail(self, key, emp):
        return self.assertJson(self.server.get("/v1/employees/" + emp, key=key))

    def set_emp_status(self, key, emp, status, also=()):
        """PATCH the employee's status; the answer shows 'status' (or one of 'also': the
        derived status, when a worker may take its waiting work at once)."""
        r = self.server.patch("/v1/employees/" + emp, {"status": status}, key=key)
        self.assertIn(self.assertJson(r)["status"], (status,) + tuple(also))

    def emp_stats(self, key, emp):
        return self.assertJson(self.server.get("/v1/employees/%s/stats" % emp, key=key))

    # -- waiting --

    def wait_task(self, key, tid, pred, timeout=20.0, what="condition", step=0.05):
        """Poll GET /v1/tasks/{id} until pred(task); fails with the last state on timeout."""
        deadline = time.time() + timeout
        while True:
            t = self.get_task(key, tid)
            if pred(t):
                return t
            if time.time() > deadline:
                self.fail("task %s: %s not reached within %.0fs; last: %s"
                          % (tid, what, timeout, json.dumps(t)[:1500]))
            time.sleep(step)

    def wait_status(self, key, tid, status, timeout=20.0, run_count=None):
        def ok(t):
            return t["status"] == status and (run_count is None or t["run_count"] == run_count)
        return self.wait_task(key, tid, ok, timeout, "status %s (run_count %s)"
                              % (status, run_count))

    def runner_passed(self):
        """The condition that stands for "nothing else ran": WITNESSES witness tasks (low
        priority, no due date) of an organization of its own, in test mode (the built-in
        engine, free), are created now, at once, and complete. The runner serves organizations
        in turns, least recently served first, one unit each (and by priority, due date and
        creation within one): between two of the witnesses' claims every other organization
        with a runnable task is served, so its first WITNESSES - 1 runnable tasks have been
        claimed by then and would show it."""
        w = getattr(self.server, "task_witness", None)
        if w is None:
            wkey = self.server.create_key(uniq("wit"), mode="test")
            w = self.server.task_witness = (wkey, self.employee(wkey, "starter"))
        made = [self.create_ok(w[0], w[1], "Witness " + uniq("w"), priority="low")
                for _ in range(WITNESSES)]
        for t in made:
            self.wait_status(w[0], t["id"], "completed", timeout=60)

    def wait_run_end_logged(self, tid):
        """The runner has finished with the run of 'tid' (stored, or discarded because the
        task was cancelled or deleted): its log line."""
        pat = re.compile(r"tasks: run \S+ of task %s (was cancelled|completed|failed)"
                         % re.escape(tid))
        self.poll(lambda: pat.search(self.server.log_text()), "the end of the run of %s" % tid,
                  60)

    def wait_value(self, fn, want, timeout=10.0, what="value"):
        deadline = time.time() + timeout
        while True:
            v = fn()
            if v == want:
                return v
            if time.time() > deadline:
                self.fail("%s: wanted %r, still %r after %.0fs" % (what, want, v, timeout))
            time.sleep(0.05)

    # -- checks --

    def assertTs(self, v, nullable=False):
        if nullable and v is None:
            return
        self.assertIsInstance(v, str)
        self.assertRegex(v, TS_RE)

    def assertCount(self, v):
        self.assertIsInstance(v, int)
        self.assertNotIsInstance(v, bool)
        self.assertGreaterEqual(v, 0)

    def checkTask(self, t):
        self.assertIsInstance(t, dict)
        self.assertEqual(set(t), TASK_FIELDS, t)
        self.assertRegex(t["id"], TASK_ID_RE)
        self.assertRegex(t["employee_id"], EMP_ID_RE)
        self.assertIsInstance(t["title"], str)
        self.assertIsInstance(t["description"], str)
        self.assertIn(t["status"], TASK_STATUSES, t)
        self.assertIn(t["priority"], PRIORITIES, t)
        for k in ("due_at", "next_run_at", "last_run_at", "started_at", "completed_at"):
            self.assertTs(t[k], nullable=True)
        for k in ("created_at", "updated_at"):
            self.assertTs(t[k])
        self.assertLessEqual(parse_ts(t["created_at"]), parse_ts(t["updated_at"]), t)
        self.assertCount(t["run_count"])
        self.assertCount(t["credits_used"])
        for k in ("result", "error"):
            if t[k] is not None:
                self.assertIsInstance(t[k], str, t)
        if t["recurring"] is None:
            self.assertIsNone(t["next_run_at"], "a one-time task has no next_run_at: %r" % t)
        else:
            rec = t["recurring"]
            self.assertIsInstance(rec, dict, t)
            self.assertIn(rec.get("frequency"), FREQUENCIES, t)
            want_keys = ["frequency", "day", "time"] if rec["frequency"] in ("weekly", "monthly") \
                else ["frequency", "time"]
            self.assertEqual(list(rec), want_keys, "recurring not canonical: %r" % rec)
            self.assertIsNotNone(t["next_run_at"], "a recurring task has a next_run_at: %r" % t)
            self.assertTrue(t["next_run_at"].endswith(":00.000Z"), t["next_run_at"])
        # last_run_at and started_at are both "the start of the latest run"
        self.assertEqual(t["last_run_at"], t["started_at"], t)
        if t["run_count"] == 0:
            self.assertIsNone(t["started_at"], t)
        else:
            self.assertIsNotNone(t["started_at"], t)
            self.assertLessEqual(parse_ts(t["created_at"]), parse_ts(t["started_at"]), t)
        if t["status"] == "in_progress":
            self.assertGreaterEqual(t["run_count"], 1, t)
            self.assertIsNone(t["result"], t)

    def checkRun(self, r):
        self.assertIsInstance(r, dict)
        self.assertEqual(set(r), RUN_FIELDS, r)
        self.assertRegex(r["id"], RUN_ID_RE)
        self.assertIn(r["status"], RUN_STATUSES, r)
        self.assertTs(r["started_at"])
        self.assertCount(r["credits_used"])
        self.assertIsInstance(r["tool_calls"], list)
        self.assertIn(r["stop_reason"], STOP_REASONS, r)
        if r["status"] != "completed":
            self.assertIsNone(r["stop_reason"], r)
        if r["status"] == "in_progress":
            self.assertIsNone(r["completed_at"], r)
            self.assertIsNone(r["result"], r)
        else:
            self.assertTs(r["completed_at"])
            self.assertLessEqual(parse_ts(r["started_at"]), parse_ts(r["completed_at"]), r)
        if r["status"] == "completed":
            self.assertIsInstance(r["result"], str, r)
            self.assertTrue(r["result"].strip(), r)
            self.assertIsNone(r["error"], r)
        elif r["status"] == "failed":
            self.assertIsNone(r["result"], r)
            self.assertIsInstance(r["error"], str, r)
            self.assertTrue(r["error"].strip(), r)
        elif r["status"] == "cancelled":
            self.assertIsNone(r["result"], r)
            self.assertEqual(r["credits_used"], 0, r)
        for k in ("result", "error"):
            if r[k] is not None:
                self.assertIsInstance(r[k], str, r)

    def checkNextRun(self, t, rule, t0, t1):
        """next_run_at of a task created/updated between t0 and t1 with 'rule'."""
        self.assertEqual(list(t["recurring"].items()), list(canonical(rule).items()))
        nr_s = t["next_run_at"]
        self.assertTs(nr_s)
        nr = parse_ts(nr_s)
        self.assertGreater(nr, t0, "next_run_at %s is not in the future" % nr_s)
        self.assertEqual(nr % 60, 0, "next_run_at %s is not a whole minute" % nr_s)
        self.assertEqual(hhmm(nr), rule["time"], nr_s)
        d = datetime.datetime.fromtimestamp(nr, UTC).date()
        self.assertTrue(rule_matches(rule, d), "%s is not a day of %r" % (nr_s, rule))
        span = {"daily": 1, "weekdays": 3, "weekly": 7, "monthly": 31}[rule["frequency"]]
        self.assertLessEqual(nr, t1 + span * 86400 + 60, nr_s)
        e0 = expected_next(rule, t0)
        e1 = expected_next(rule, t1 + 120)
        if e0 == e1:  # no slot within two minutes of the request: the value is exact
            self.assertEqual(nr_s, iso(e0), "next occurrence of %r" % (rule,))
        return nr


# =====================================================================================
# The API: create, validation, records, list, PATCH, DELETE, isolation (builtin engine)
# =====================================================================================

class TaskApiTest(TaskHelpers, ChatTestCase):

    @classmethod
    def setUpServer(cls):
        cls.other = cls.server.create_key("tk-api-other", credits=1000)

    def fresh(self, credits=100000, tier=None):
        """A new organization: (live key, test key, org)."""
        org = self.new_org()
        live = self.server.create_key(org, credits=credits, tier=tier)
        test = self.server.create_key(org, mode="test")
        return live, test, org

    def offline_emp(self, key, index=0):
        emp = self.employee(key, "starter", index)
        self.set_emp_status(key, emp, "offline")
        return emp

    # -- create --

    def test_create_every_field(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        t0 = time.time()
        t = self.create_ok(live, emp, "Quarterly report", description="Numbers for Q3.\nTwo lines.",
                           due_at="2031-03-04T05:06:07.089Z", priority="high")
        t1 = time.time()
        self.assertEqual(t["description"], "Numbers for Q3.\nTwo lines.")
        self.assertEqual(t["status"], "pending")
        self.assertEqual(t["priority"], "high")
        self.assertEqual(t["due_at"], "2031-03-04T05:06:07.089Z")
        self.assertIsNone(t["recurring"])
        self.assertIsNone(t["next_run_at"])
        self.assertIsNone(t["last_run_at"])
        self.assertEqual(t["run_count"], 0)
        self.assertIsNone(t["result"])
        self.assertIsNone(t["error"])
        self.assertEqual(t["credits_used"], 0)
        self.assertIsNone(t["started_at"])
        self.assertIsNone(t["completed_at"])
        self.assertGreaterEqual(parse_ts(t["created_at"]), t0 - 1)
        self.assertLessEqual(parse_ts(t["created_at"]), t1 + 1)
        self.assertEqual(t["updated_at"], t["created_at"])
        self.assertIsInstance(t["run_count"], int)
        self.assertEqual(self.get_task(live, t["id"]), t)
        body = self.list_tasks(live)
        self.assertEqual(body["tasks"], [t])
        self.assertFalse(body["has_more"])
        self.assertIsNone(body["next_cursor"])
        self.assertEqual(self.runs_page(live, t["id"]),
                         {"runs": [], "has_more": False, "next_cursor": None})

    def test_create_defaults(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        t = self.create_ok(live, emp, "Only a title")
        self.assertEqual((t["description"], t["priority"], t["due_at"], t["recurring"],
                          t["next_run_at"], t["status"], t["run_count"], t["credits_used"]),
                         ("", "medium", None, None, None, "pending", 0, 0))
        t = self.create_ok(live, emp, "Explicit nulls", description=None, due_at=None)
        self.assertEqual((t["description"], t["priority"], t["due_at"], t["recurring"],
                          t["next_run_at"]), ("", "medium", None, None, None))
        for p in PRIORITIES:
            with self.subTest(priority=p):
                self.assertEqual(self.create_ok(live, emp, "P " + p, priority=p)["priority"], p)

    def test_due_at_forms(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        for given, want in (("2030-01-02T03:04:05Z", "2030-01-02T03:04:05.000Z"),
                            ("2030-01-02T03:04:05.123Z", "2030-01-02T03:04:05.123Z"),
                            ("2030-01-02T03:04:05+02:00", "2030-01-02T01:04:05.000Z"),
                            ("2030-01-02T03:04:05.250-05:30", "2030-01-02T08:34:05.250Z"),
                            ("2028-02-29T23:59:59Z", "2028-02-29T23:59:59.000Z")):
            with self.subTest(due_at=given):
                t = self.create_ok(live, emp, "Due " + given, due_at=given)
                self.assertEqual(t["due_at"], want)
                self.assertEqual(self.get_task(live, t["id"])["due_at"], want)

    def test_length_boundaries_in_code_points(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        for title in ("x" * 200, "é" * 200, "😀" * 200, "a", "Ünïcödé ✓"):
            with self.subTest(title=title[:5], n=len(title)):
                t = self.create_ok(live, emp, title)
                self.assertEqual(self.get_task(live, t["id"])["title"], title)
        for desc in ("d" * 10000, "é" * 10000, "😀" * 10000, ""):
            with self.subTest(description=desc[:3], n=len(desc)):
                t = self.create_ok(live, emp, "Long description", description=desc)
                self.assertEqual(self.get_task(live, t["id"])["description"], desc)

    def test_recurring_accepted_canonical_and_next_run_at(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        now = time.time()
        today = datetime.datetime.fromtimestamp(now, UTC)
        rules = [
            {"frequency": "daily", "time": hhmm(now + 3 * 3600)},
            {"frequency": "daily", "time": "00:00"},
            {"frequency": "daily", "time": "23:59"},
            {"frequency": "weekdays", "time": "09:30"},
            {"frequency": "weekdays", "time": hhmm(now + 5 * 3600)},
            {"time": "17:45", "day": "wednesday", "frequency": "weekly"},
            {"frequency": "weekly", "day": "sunday", "time": "23:59"},
            {"frequency": "weekly", "day": WEEKDAYS[today.weekday()], "time": hhmm(now - 3600)},
            {"frequency": "weekly", "day": WEEKDAYS[today.weekday()], "time": hhmm(now + 3600)},
            {"day": "31", "time": "12:00", "frequency": "monthly"},
            {"frequency": "monthly", "day": "30", "time": "06:15"},
            {"frequency": "monthly", "day": "29", "time": "18:00"},
            {"frequency": "monthly", "day": "1", "time": "00:00"},
            {"frequency": "monthly", "day": str(today.day), "time": hhmm(now + 2 * 3600)},
        ]
        for rule in rules:
            with self.subTest(rule=rule):
                t0 = time.time()
                t = self.create_ok(live, emp, "Recurring " + json.dumps(rule), recurring=rule)
                t1 = time.time()
                self.assertEqual(t["status"], "pending")
                self.assertEqual(t["run_count"], 0)
                self.checkNextRun(t, rule, t0, t1)
                got = self.get_task(live, t["id"])
                self.assertEqual(got, t)
                self.assertEqual(list(got["recurring"].items()), list(canonical(rule).items()))

    def test_monthly_31_clamps(self):
        """Day 31 falls on the month's last day: the expected value for the next 13 months."""
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        rule = {"frequency": "monthly", "day": "31", "time": "12:00"}
        t0 = time.time()
        t = self.create_ok(live, emp, "Month end", recurring=rule)
        t1 = time.time()
        nr = self.checkNextRun(t, rule, t0, t1)
        d = datetime.datetime.fromtimestamp(nr, UTC)
        self.assertEqual(d.day, calendar.monthrange(d.year, d.month)[1],
                         "monthly day 31 is the last day of the month: %s" % t["next_run_at"])
        # the pure calendar used above, checked against a known year
        ends = [datetime.datetime.fromtimestamp(
            expected_next(rule, datetime.datetime(2027, m, 1, tzinfo=UTC).timestamp()), UTC).day
            for m in range(1, 13)]
        self.assertEqual(ends, [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])

    def test_validation(self):
        live, test, _ = self.fresh()
        e = self.employee(live, "starter")
        ok = {"employee_id": e, "title": "t"}

        def rec(**r):
            return dict(ok, recurring=r)

        cases = [
            ({"title": "t"}, "employee_id"),
            ({"employee_id": 5, "title": "t"}, "employee_id"),
            ({"employee_id": None, "title": "t"}, "employee_id"),
            ({"employee_id": [e], "title": "t"}, "employee_id"),
            ({"employee_id": e}, "title"),
            (dict(ok, title=""), "title"),
            (dict(ok, title="   "), "title"),
            (dict(ok, title=" \t\n "), "title"),
            (dict(ok, title=None), "title"),
            (dict(ok, title=7), "title"),
            (dict(ok, title=["t"]), "title"),
            (dict(ok, title="x" * 201), "title"),
            (dict(ok, title="é" * 201), "title"),
            (dict(ok, title="😀" * 201), "title"),
            (dict(ok, description="x" * 10001), "description"),
            (dict(ok, description="é" * 10001), "description"),
            (dict(ok, description=5), "description"),
            (dict(ok, description=["d"]), "description"),
            (dict(ok, due_at="tomorrow"), "due_at"),
            (dict(ok, due_at="2030-05-01"), "due_at"),
            (dict(ok, due_at="2030-02-30T10:00:00Z"), "due_at"),
            (dict(ok, due_at="2031-02-29T10:00:00Z"), "due_at"),
            (dict(ok, due_at="2030-05-01T10:00:00"), "due_at"),
            (dict(ok, due_at="2030-13-01T10:00:00Z"), "due_at"),
            (dict(ok, due_at="2030-05-01T25:00:00Z"), "due_at"),
            (dict(ok, due_at=""), "due_at"),
            (dict(ok, due_at=1893456000), "due_at"),
            (dict(ok, priority="critical"), "priority"),
            (dict(ok, priority="High"), "priority"),
            (dict(ok, priority=""), "priority"),
            (dict(ok, priority=1), "priority"),
            (dict(ok, recurring="daily"), "recurring"),
            (dict(ok, recurring=[]), "recurring"),
            (dict(ok, recurring=5), "recurring"),
            (dict(ok, recurring=True), "recurring"),
            (rec(frequency="hourly", time="09:00"), "recurring.frequency"),
            (rec(frequency="Daily", time="09:00"), "recurring.frequency"),
            (rec(frequency=1, time="09:00"), "recurring.frequency"),
            (rec(time="09:00"), "recurring.frequency"),
            (rec(frequency="weekly", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", time="09:00"), "recurring.day"),
            (rec(frequency="daily", day="monday", time="09:00"), "recurring.day"),
            (rec(frequency="daily", day=None, time="09:00"), "recurring.day"),
            (rec(frequency="weekdays", day="1", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day="0", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day="32", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day="01", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day=15, time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day="-1", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day=" 5", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day="monday", time="09:00"), "recurring.day"),
            (rec(frequency="monthly", day=None, time="09:00"), "recurring.day"),
            (rec(frequency="weekly", day="Monday", time="09:00"), "recurring.day"),
            (rec(frequency="weekly", day="mon", time="09:00"), "recurring.day"),
            (rec(frequency="weekly", day="1", time="09:00"), "recurring.day"),
            (rec(frequency="weekly", day=0, time="09:00"), "recurring.day"),
            (rec(frequency="daily", time="9:00"), "recurring.time"),
            (rec(frequency="daily", time="24:00"), "recurring.time"),
            (rec(frequency="daily", time="12:60"), "recurring.time"),
            (rec(frequency="daily", time="09:00:00"), "recurring.time"),
            (rec(frequency="daily", time="0900"), "recurring.time"),
            (rec(frequency="daily", time=" 09:00"), "recurring.time"),
            (rec(frequency="daily", time=""), "recurring.time"),
            (rec(frequency="daily", time=900), "recurring.time"),
            (rec(frequency="daily", time=None), "recurring.time"),
            (rec(frequency="weekly", day="monday"), "recurring.time"),
            (rec(frequency="daily", time="09:00", tz="UTC"), "recurring.tz"),
            (rec(frequency="weekly", day="monday", time="09:00", every=2), "recurring.every"),
            (dict(ok, foo=1), "foo"),
            (dict(ok, Title="x"), "Title"),
            (dict(ok, status="pending"), "status"),
            (dict(ok, id="task_abc"), "id"),
            (dict(ok, run_count=0), "run_count"),
            # the body is checked before the employee
            ({"employee_id": NO_EMP, "title": ""}, "title"),
            ({"employee_id": NO_EMP, "title": "t", "priority": "critical"}, "priority"),
            ({"employee_id": NO_EMP, "title": "t", "bogus": True}, "bogus"),
        ]
        self.assertEqual(self.all_task_ids(live), [])
        for body, param in cases:
            with self.subTest(param=param, body=json.dumps(body)[:120]):
                r = self.server.post("/v1/tasks", body, key=live)
                self.assertError(r, 400, "invalid_request", param)
                self.assertEqual(self.all_task_ids(live), [], "a refused create stored a task")
        for raw in (b"{", b"[]", b'"task"', b"null",
                    b'{"employee_id": "%s", "title": "a", "title": "b"}' % e.encode()):
            with self.subTest(raw=raw):
                r = self.server.request("POST", "/v1/tasks", body=raw, key=live)
                self.assertError(r, 400, "invalid_request")
        self.assertEqual(self.all_task_ids(live), [])
        self.assertEqual(self.balance(live), 100000)

    def test_employee_checks(self):
        live, test, org = self.fresh()
        other_emp = self.employee(self.other, "starter")
        test_emp = self.employee(test, "starter")
        for eid in (NO_EMP, "x", other_emp, test_emp):
            with self.subTest(employee_id=eid):
                r = self.create(live, eid, "Nobody")
                self.assertError(r, 404, "employee_not_found", "employee_id")
        # a live employee through the test key
        r = self.create(test, self.employee(live, "starter"), "Wrong mode")
        self.assertError(r, 404, "employee_not_found", "employee_id")
        # tier: a starter organization cannot give a manager employee a task (both modes)
        for key in (live, test):
            with self.subTest(tier="starter", key=key[:9]):
                r = self.create(key, self.employee(key, "manager"), "Manager work")
                self.assertError(r, 403, "permission_denied", "employee_id")
        self.assertEqual(self.all_task_ids(live), [])
        self.assertEqual(self.all_task_ids(test), [])
        # a manager organization can; an offline employee is accepted
        mgr = self.server.create_key(self.new_org("tkm"), tier="manager", credits=1000)
        memp = self.employee(mgr, "manager")
        self.set_emp_status(mgr, memp, "offline")
        t = self.create_ok(mgr, memp, "Manager work")
        self.assertEqual(t["status"], "pending")
        self.assertEqual(self.all_task_ids(mgr), [t["id"]])

    def test_scopes(self):
        live, _, org = self.fresh()
        emp = self.offline_emp(live)
        t = self.create_ok(live, emp, "Scoped")
        chat_only = self.server.create_key(org, scopes="chat")
        for method, path, body in (("POST", "/v1/tasks", {"employee_id": emp, "title": "x"}),
                                   ("GET", "/v1/tasks", None),
                                   ("GET", "/v1/tasks/" + t["id"], None),
                                   ("PATCH", "/v1/tasks/" + t["id"], {"title": "y"}),
                                   ("DELETE", "/v1/tasks/" + t["id"], None),
                                   ("GET", "/v1/tasks/%s/runs" % t["id"], None)):
            with self.subTest(method=method, path=path):
                r = self.server.request(method, path, key=chat_only, json_body=body)
                self.assertError(r, 403, "permission_denied")
        self.assertEqual(self.get_task(live, t["id"]), t)
        tasks_only = self.server.create_key(org, scopes="tasks")
        t2 = self.create_ok(tasks_only, emp, "With the tasks scope")
        self.assertEqual(self.patch_ok(tasks_only, t2["id"], {"title": "Renamed"})["title"],
                         "Renamed")
        self.assertEqual(set(self.all_task_ids(tasks_only)), {t["id"], t2["id"]})
        self.assertEqual(self.assertJson(self.delete_task(tasks_only, t2["id"])),
                         {"id": t2["id"], "deleted": True})

    # -- list --

    def test_list_filters_cursor_and_validation(self):
        _, key, _ = self.fresh()
        a = self.employee(key, "starter", 0)
        b = self.employee(key, "starter", 1)
        self.set_emp_status(key, b, "offline")
        made = {}
        for label, emp, prio in (("a1", a, "high"), ("a2", a, "low"), ("b1", b, "urgent"),
                                 ("b2", b, "medium"), ("b3", b, "high")):
            made[label] = self.create_ok(key, emp, "List " + label, priority=prio)["id"]
            next_millisecond()
        self.wait_status(key, made["a1"], "completed")
        self.wait_status(key, made["a2"], "completed")
        self.assertEqual(self.patch_ok(key, made["b3"], {"status": "failed"})["status"], "failed")
        ids = lambda labels: [made[x] for x in labels]  # noqa: E731
        newest = ids(["b3", "b2", "b1", "a2", "a1"])
        self.assertEqual(self.all_task_ids(key), newest)
        for query, want in (({"employee_id": a}, ["a2", "a1"]),
                            ({"employee_id": b}, ["b3", "b2", "b1"]),
                            ({"status": "completed"}, ["a2", "a1"]),
                            ({"status": "pending"}, ["b2", "b1"]),
                            ({"status": "failed"}, ["b3"]),
                            ({"status": "in_progress"}, []),
                            ({"priority": "high"}, ["b3", "a1"]),
                            ({"priority": "urgent"}, ["b1"]),
                            ({"priority": "medium"}, ["b2"]),
                            ({"priority": "low"}, ["a2"]),
                            ({"employee_id": b, "status": "pending", "priority": "urgent"},
                             ["b1"]),
                            ({"employee_id": a, "status": "pending"}, [])):
            with self.subTest(query=query):
                self.assertEqual(self.all_task_ids(key, **query), ids(want))
                items, _ = self.walk_tasks(key, 1, **query)
                self.assertEqual([t["id"] for t in items], ids(want))
        items, sizes = self.walk_tasks(key, 2)
        self.assertEqual(sizes, [2, 2, 1])
        self.assertEqual([t["id"] for t in items], newest)
        created = [parse_ts(t["created_at"]) for t in items]
        self.assertEqual(created, sorted(created, reverse=True))
        items, sizes = self.walk_tasks(key, 5)
        self.assertEqual(sizes, [5], "a full last page must say has_more false")
        items, sizes = self.walk_tasks(key, 2, employee_id=b)
        self.assertEqual(sizes, [2, 1])
        self.assertEqual([t["id"] for t in items], ids(["b3", "b2", "b1"]))
        # keyset: a task created during a walk neither repeats nor shifts the rest
        p1 = self.list_tasks(key, limit=2)
        newer = self.create_ok(key, b, "List newer")["id"]
        rest, before = [], p1["next_cursor"]
        while before:
            body = self.list_tasks(key, limit=2, before=before)
            rest += [t["id"] for t in body["tasks"]]
            before = body["next_cursor"] if body["has_more"] else None
        self.assertEqual([t["id"] for t in p1["tasks"]] + rest, newest)
        self.assertEqual(self.all_task_ids(key)[0], newer)
        # default limit 50
        for i in range(50):
            self.create_ok(key, b, "Bulk %02d" % i)
        body = self.list_tasks(key)
        self.assertEqual(len(body["tasks"]), 50)
        self.assertTrue(body["has_more"])
        self.assertEqual(len(self.list_tasks(key, limit=100)["tasks"]), 56)
        # validation
        for q, param in (("status=done", "status"), ("status=cancelled", "status"),
                         ("status=PENDING", "status"), ("status=", "status"),
                         ("priority=critical", "priority"), ("priority=", "priority"),
                         ("limit=0", "limit"), ("limit=101", "limit"), ("limit=-1", "limit"),
                         ("limit=abc", "limit"), ("limit=", "limit"), ("limit=1.5", "limit"),
                         ("before=not-a-cursor", "before"), ("foo=1", "foo"),
                         ("limit=1&limit=2", "limit")):
            with self.subTest(query=q):
                r = self.server.get("/v1/tasks?" + q, key=key)
                self.assertError(r, 400, "invalid_request", param)
        for eid in (NO_EMP, self.employee(self.other, "starter")):
            with self.subTest(employee_id=eid):
                r = self.server.get("/v1/tasks?employee_id=" + eid, key=key)
                self.assertError(r, 404, "employee_not_found", "employee_id")
        for q in ("limit=1", "limit=100"):
            self.assertJson(self.server.get("/v1/tasks?" + q, key=key))

    def test_runs_list_validation(self):
        live, _, _ = self.fresh()
        t = self.create_ok(live, self.offline_emp(live), "Runs of nothing")
        for q, param in (("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"),
                         ("before=garbage", "before"), ("foo=1", "foo")):
            with self.subTest(query=q):
                r = self.server.get("/v1/tasks/%s/runs?%s" % (t["id"], q), key=live)
                self.assertError(r, 400, "invalid_request", param)

    # -- PATCH --

    def test_patch_fields(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live, 0)
        emp2 = self.offline_emp(live, 1)
        t = self.create_ok(live, emp, "Before", description="old", priority="low",
                           due_at="2030-01-01T00:00:00Z")
        next_millisecond()
        u = self.patch_ok(live, t["id"], {"title": "After", "description": "new",
                                          "priority": "urgent",
                                          "due_at": "2032-01-01T00:00:00+01:00"})
        self.assertEqual((u["title"], u["description"], u["priority"], u["due_at"]),
                         ("After", "new", "urgent", "2031-12-31T23:00:00.000Z"))
        self.assertEqual((u["id"], u["employee_id"], u["status"], u["created_at"], u["run_count"]),
                         (t["id"], emp, "pending", t["created_at"], 0))
        self.assertGreater(parse_ts(u["updated_at"]), parse_ts(t["updated_at"]))
        self.assertEqual(self.get_task(live, t["id"]), u)
        # {} is a no-op answering the task as it is
        self.assertEqual(self.patch_ok(live, t["id"], {}), u)
        self.assertEqual(self.get_task(live, t["id"]), u)
        # the same status again is a no-op
        self.assertEqual(self.patch_ok(live, t["id"], {"status": "pending"})["status"], "pending")
        u = self.patch_ok(live, t["id"], {"due_at": None})
        self.assertIsNone(u["due_at"])
        self.assertEqual(u["title"], "After")
        u = self.patch_ok(live, t["id"], {"employee_id": emp2})
        self.assertEqual(u["employee_id"], emp2)
        self.assertEqual(self.all_task_ids(live, employee_id=emp2), [t["id"]])
        self.assertEqual(self.all_task_ids(live, employee_id=emp), [])
        # recurring set, changed and stopped; next_run_at follows
        for rule in ({"frequency": "weekly", "day": "friday", "time": "08:00"},
                     {"time": "10:10", "frequency": "daily"},
                     {"frequency": "monthly", "day": "31", "time": "23:30"}):
            with self.subTest(rule=rule):
                t0 = time.time()
                u = self.patch_ok(live, t["id"], {"recurring": rule})
                t1 = time.time()
                self.checkNextRun(u, rule, t0, t1)
                self.assertEqual(self.get_task(live, t["id"]), u)
        u = self.patch_ok(live, t["id"], {"recurring": None})
        self.assertIsNone(u["recurring"])
        self.assertIsNone(u["next_run_at"])
        self.assertEqual(self.get_task(live, t["id"]), u)
        # a one-time task made recurring from create, then stopped
        rule = {"frequency": "weekdays", "time": "06:45"}
        r2 = self.create_ok(live, emp, "Recurring then one-time", recurring=rule)
        self.assertIsNotNone(r2["next_run_at"])
        u2 = self.patch_ok(live, r2["id"], {"recurring": None})
        self.assertEqual((u2["recurring"], u2["next_run_at"], u2["status"]),
                         (None, None, "pending"))

    def test_patch_validation_changes_nothing(self):
        live, test, _ = self.fresh()
        emp = self.offline_emp(live)
        t = self.create_ok(live, emp, "Keep me", description="as is", priority="high",
                           due_at="2030-06-01T12:00:00Z",
                           recurring={"frequency": "daily",
                                      "time": hhmm(time.time() + 6 * 3600)})
        cases = [
            ({"title": ""}, "title"), ({"title": "  "}, "title"), ({"title": None}, "title"),
            ({"title": 3}, "title"), ({"title": "x" * 201}, "title"),
            ({"title": "é" * 201}, "title"),
            ({"description": "x" * 10001}, "description"), ({"description": 3}, "description"),
            ({"due_at": "2030-02-30T00:00:00Z"}, "due_at"), ({"due_at": "2030-01-01"}, "due_at"),
            ({"due_at": 5}, "due_at"),
            ({"priority": "critical"}, "priority"), ({"priority": None}, "priority"),
            ({"status": "in_progress"}, "status"), ({"status": "done"}, "status"),
            ({"status": "cancelled"}, "status"), ({"status": None}, "status"),
            ({"status": "PENDING"}, "status"),
            ({"recurring": "weekly"}, "recurring"), ({"recurring": []}, "recurring"),
            ({"recurring": {"frequency": "weekly", "time": "09:00"}}, "recurring.day"),
            ({"recurring": {"frequency": "daily", "day": "1", "time": "09:00"}}, "recurring.day"),
            ({"recurring": {"frequency": "monthly", "day": "01", "time": "09:00"}},
             "recurring.day"),
            ({"recurring": {"frequency": "daily", "time": "24:00"}}, "recurring.time"),
            ({"recurring": {"frequency": "yearly", "time": "09:00"}}, "recurring.frequency"),
            ({"recurring": {"frequency": "daily", "time": "09:00", "x": 1}}, "recurring.x"),
            ({"employee_id": 5}, "employee_id"), ({"employee_id": None}, "employee_id"),
            ({"foo": 1}, "foo"), ({"id": NO_TASK}, "id"), ({"run_count": 3}, "run_count"),
            ({"result": "done"}, "result"),
            # all or nothing: a good field beside a bad one is not applied
            ({"title": "Changed", "priority": "critical"}, "priority"),
            ({"priority": "low", "recurring": {"frequency": "daily", "time": "9:00"}},
             "recurring.time"),
        ]
        for body, param in cases:
            with self.subTest(param=param, body=json.dumps(body)[:100]):
                self.assertError(self.patch_task(live, t["id"], body), 400, "invalid_request",
                                 param)
                self.assertEqual(self.get_task(live, t["id"]), t, "a refused PATCH changed it")
        for body, status, code in (({"employee_id": NO_EMP}, 404, "employee_not_found"),
                                   ({"title": "Changed", "employee_id": NO_EMP}, 404,
                                    "employee_not_found"),
                                   ({"employee_id": self.employee(self.other, "starter")}, 404,
                                    "employee_not_found"),
                                   ({"employee_id": self.employee(test, "starter")}, 404,
                                    "employee_not_found"),
                                   ({"employee_id": self.employee(live, "manager")}, 403,
                                    "permission_denied"),
                                   ({"priority": "low",
                                     "employee_id": self.employee(live, "manager")}, 403,
                                    "permission_denied")):
            with self.subTest(body=body):
                self.assertError(self.patch_task(live, t["id"], body), status, code,
                                 "employee_id")
                self.assertEqual(self.get_task(live, t["id"]), t, "a refused PATCH changed it")
        r = self.server.request("PATCH", "/v1/tasks/" + t["id"], body=b"{", key=live)
        self.assertError(r, 400, "invalid_request")
        self.assertEqual(self.get_task(live, t["id"]), t)

    # -- DELETE, not found, isolation --

    def test_delete_pending(self):
        live, _, _ = self.fresh()
        emp = self.offline_emp(live)
        t = self.create_ok(live, emp, "Delete me")
        keep = self.create_ok(live, emp, "Keep me")
        self.assertEqual(self.assertJson(self.delete_task(live, t["id"])),
                         {"id": t["id"], "deleted": True})
        self.assertError(self.server.get("/v1/tasks/" + t["id"], key=live), 404,
                         "task_not_found", "id")
        self.assertError(self.server.get("/v1/tasks/%s/runs" % t["id"], key=live), 404,
                         "task_not_found", "id")
        self.assertError(self.patch_task(live, t["id"], {"title": "x"}), 404, "task_not_found",
                         "id")
        self.assertError(self.delete_task(live, t["id"]), 404, "task_not_found", "id")
        self.assertEqual(self.all_task_ids(live), [keep["id"]])
        self.set_emp_status(live, emp, "idle", also=("active",))  # its task may start at once
        self.wait_status(live, keep["id"], "completed")
        self.assertError(self.server.get("/v1/tasks/" + t["id"], key=live), 404,
                         "task_not_found", "id")

    def test_not_found(self):
        live, _, _ = self.fresh()
        for tid in (NO_TASK, "x", "task_", "trun_" + "A" * 24):
            with self.subTest(id=tid):
                self.assertError(self.server.get("/v1/tasks/" + tid, key=live), 404,
                                 "task_not_found", "id")
                self.assertError(self.patch_task(live, tid, {"title": "x"}), 404,
                                 "task_not_found", "id")
                self.assertError(self.delete_task(live, tid), 404, "task_not_found", "id")
                self.assertError(self.server.get("/v1/tasks/%s/runs" % tid, key=live), 404,
                                 "task_not_found", "id")

    def test_isolation(self):
        live, test, org = self.fresh()
        emp = self.offline_emp(live)
        t = self.create_ok(live, emp, "Ours only", priority="urgent")
        done = self.create_ok(test, self.employee(test, "starter"), "Sandbox task")
        self.wait_status(test, done["id"], "completed")
        for key, name in ((self.other, "other org"), (test, "same org, test key")):
            with self.subTest(key=name):
                self.assertError(self.server.get("/v1/tasks/" + t["id"], key=key), 404,
                                 "task_not_found", "id")
                self.assertError(self.patch_task(key, t["id"], {"status": "completed"}), 404,
                                 "task_not_found", "id")
                self.assertError(self.patch_task(key, t["id"], {"title": "mine"}), 404,
                                 "task_not_found", "id")
                self.assertError(self.delete_task(key, t["id"]), 404, "task_not_found", "id")
                self.assertError(self.server.get("/v1/tasks/%s/runs" % t["id"], key=key), 404,
                                 "task_not_found", "id")
                self.assertNotIn(t["id"], self.all_task_ids(key))
                self.assertNotIn(t["id"], self.all_task_ids(key, priority="urgent"))
                r = self.server.get("/v1/tasks?employee_id=" + emp, key=key)
                self.assertError(r, 404, "employee_not_found", "employee_id")
        for key, name in ((self.other, "other org"), (live, "same org, live key")):
            with self.subTest(key=name, task="sandbox"):
                self.assertError(self.server.get("/v1/tasks/" + done["id"], key=key), 404,
                                 "task_not_found", "id")
                self.assertError(self.server.get("/v1/tasks/%s/runs" % done["id"], key=key),
                                 404, "task_not_found", "id")
        self.assertEqual(self.get_task(live, t["id"]), t)
        self.assertEqual(self.all_task_ids(live), [t["id"]])
        self.assertEqual(self.all_task_ids(test), [done["id"]])
        self.assertEqual(len(self.runs(test, done["id"])), 1)


# =====================================================================================
# Execution with the builtin engine: lifecycle, credits, offline, re-run, status rules
# =====================================================================================

class TaskRunTest(TaskHelpers, ChatTestCase):

    def fresh(self, credits=100000):
        org = self.new_org("tkr")
        live = self.server.create_key(org, credits=credits)
        test = self.server.create_key(org, mode="test")
        return live, test, org

    def test_lifecycle_test_key(self):
        live, key, _ = self.fresh()
        b0 = self.balance(live)
        emp = self.employee(key, "starter")
        self.set_emp_status(key, emp, "offline")
        title = "Compile the onboarding checklist " + uniq("lc")
        t = self.create_ok(key, emp, title, description="For the new hires of March.")
        self.assertEqual(t["status"], "pending")
        self.runner_passed()
        self.assertEqual(self.get_task(key, t["id"]), t, "it ran for an offline employee")
        self.set_emp_status(key, emp, "idle", also=("active",))
        done = self.wait_status(key, t["id"], "completed")
        self.assertEqual(done["run_count"], 1)
        self.assertIsInstance(done["result"], str)
        self.assertIn(title, done["result"], "the builtin result quotes the task")
        self.assertIsNone(done["error"])
        self.assertEqual(done["credits_used"], 0)
        self.assertIsNone(done["next_run_at"])
        for k in ("started_at", "completed_at", "last_run_at"):
            self.assertIsNotNone(done[k], k)
        self.assertEqual(done["last_run_at"], done["started_at"])
        self.assertLessEqual(parse_ts(done["created_at"]), parse_ts(done["started_at"]))
        self.assertLessEqual(parse_ts(done["started_at"]), parse_ts(done["completed_at"]))
        self.assertLessEqual(parse_ts(done["completed_at"]), parse_ts(done["updated_at"]))
        self.assertEqual((done["title"], done["description"], done["created_at"],
                          done["priority"]),
                         (t["title"], t["description"], t["created_at"], t["priority"]))
        runs = self.runs(key, t["id"])
        self.assertEqual(len(runs), 1)
        run = runs[0]
        self.assertEqual(set(run), RUN_FIELDS)
        self.assertEqual((run["status"], run["started_at"], run["completed_at"], run["result"],
                          run["error"], run["credits_used"]),
                         ("completed", done["started_at"], done["completed_at"], done["result"],
                          None, 0))
        self.assertEqual(self.runs_page(key, t["id"]),
                         {"runs": [run], "has_more": False, "next_cursor": None})
        self.assertEqual(self.balance(live), b0, "a test-key run was charged")
        self.wait_value(lambda: self.emp_detail(key, emp)["status"], "idle",
                        what="employee status after the run")
        self.runner_passed()
        self.assertEqual(self.get_task(key, t["id"]), done, "a one-time task ran again")

    def test_live_key_is_charged(self):
        live, _, _ = self.fresh(credits=1000)
        emp = self.employee(live, "starter")
        t = self.create_ok(live, emp, "Write the weekly summary " + uniq("ch"))
        done = self.wait_status(live, t["id"], "completed")
        self.assertGreaterEqual(done["credits_used"], 1)
        self.assertEqual(self.balance(live), 1000 - done["credits_used"])
        runs = self.runs(live, t["id"])
        self.assertEqual([r["status"] for r in runs], ["completed"])
        self.assertEqual(runs[0]["credits_used"], done["credits_used"])
        self.assertEqual(runs[0]["result"], done["result"])

    def test_no_credits_run_fails_then_rerun(self):
        live, _, org = self.fresh(credits=0)
        emp = self.employee(live, "starter")
        t = self.create_ok(live, emp, "Unpaid work " + uniq("nc"))
        failed = self.wait_status(live, t["id"], "failed")
        self.assertEqual(failed["run_count"], 1)
        self.assertIsNone(failed["result"])
        self.assertIsInstance(failed["error"], str)
        self.assertIn("credit", failed["error"].lower())
        self.assertEqual(failed["credits_used"], 0)
        self.assertIsNotNone(failed["completed_at"])
        runs = self.runs(live, t["id"])
        self.assertEqual(len(runs), 1)
        self.assertEqual((runs[0]["status"], runs[0]["result"], runs[0]["error"],
                          runs[0]["credits_used"]), ("failed", None, failed["error"], 0))
        self.assertEqual(self.balance(live), 0)
        self.runner_passed()
        self.assertEqual(self.get_task(live, t["id"])["run_count"], 1, "a failed task re-ran")
        # failed -> pending: queued again, and it runs now that there are credits
        self.set_credits(org, 500)
        p = self.patch_ok(live, t["id"], {"status": "pending"})
        self.assertIn(p["status"], ("pending", "in_progress", "completed"))
        done = self.wait_status(live, t["id"], "completed", run_count=2)
        self.assertIsNone(done["error"])
        self.assertGreaterEqual(done["credits_used"], 1)
        self.assertEqual(self.balance(live), 500 - done["credits_used"])
        runs = self.runs(live, t["id"])
        self.assertEqual([r["status"] for r in runs], ["completed", "failed"])
        self.assertEqual(runs[0]["started_at"], done["started_at"])

    def test_run_rechecks_the_tier(self):
        """A task run checks the employee's tier again when it starts, as a workflow step does
        (contract §3): a manager-tier employee's task, given while the organization was on
        the manager tier, fails with permission_denied once it went back to starter, and
        costs nothing."""
        org = self.new_org("tkt")
        live = self.server.create_key(org, credits=1000, tier="manager")
        mgr = self.employee(live, "manager")
        self.set_emp_status(live, mgr, "offline")
        t = self.create_ok(live, mgr, "Plan the quarter " + uniq("tier"))
        p = self.server.orgs_update(org, tier="starter")
        self.assertEqual(p.returncode, 0, p.stderr)
        # the CLI is another process: its change is seen within 1 s (the contract)
        self.wait_value(lambda: self.assertJson(self.server.get("/v1/account", key=live))["tier"],
                        "starter", what="the new tier")
        self.set_emp_status(live, mgr, "idle", also=("active",))
        failed = self.wait_status(live, t["id"], "failed")
        self.assertTrue(failed["error"].startswith("permission_denied: "), failed["error"])
        self.assertEqual((failed["result"], failed["credits_used"]), (None, 0))
        self.assertEqual(self.balance(live), 1000, "a refused run was charged")

    def test_offline_employee_tasks_wait(self):
        _, key, _ = self.fresh()
        emp = self.employee(key, "starter", 1)
        other = self.employee(key, "starter", 2)
        self.set_emp_status(key, emp, "offline")
        waiting = [self.create_ok(key, emp, "Wait %d" % i) for i in range(2)]
        running = self.create_ok(key, other, "Not waiting")
        self.wait_status(key, running["id"], "completed")
        self.runner_passed()
        for t in waiting:
            now = self.get_task(key, t["id"])
            self.assertEqual(now, t, "a task of an offline employee changed")
            self.assertEqual(self.runs(key, t["id"]), [])
        self.assertEqual(set(self.all_task_ids(key, status="pending")),
                         {t["id"] for t in waiting})
        # a worker (on any node) may take a waiting task before the answer is read back
        self.set_emp_status(key, emp, "idle", also=("active",))
        for t in waiting:
            done = self.wait_status(key, t["id"], "completed")
            self.assertEqual(done["run_count"], 1)

    def test_rerun_completed(self):
        _, key, _ = self.fresh()
        emp = self.employee(key, "starter")
        t = self.create_ok(key, emp, "Run me twice " + uniq("rr"))
        first = self.wait_status(key, t["id"], "completed", run_count=1)
        # the same status again is a no-op; in_progress is refused
        self.assertEqual(self.patch_ok(key, t["id"], {"status": "completed"}), first)
        self.assertError(self.patch_task(key, t["id"], {"status": "in_progress"}), 400,
                         "invalid_request", "status")
        self.assertEqual(self.get_task(key, t["id"]), first)
        next_millisecond()
        p = self.patch_ok(key, t["id"], {"status": "pending"})
        self.assertIn(p["status"], ("pending", "in_progress", "completed"))
        second = self.wait_status(key, t["id"], "completed", run_count=2)
        self.assertGreater(parse_ts(second["started_at"]), parse_ts(first["started_at"]))
        self.assertGreaterEqual(parse_ts(second["completed_at"]),
                                parse_ts(first["completed_at"]))
        self.assertEqual(second["last_run_at"], second["started_at"])
        self.assertEqual(second["credits_used"], 0)
        runs = self.runs(key, t["id"])
        self.assertEqual(len(runs), 2)
        self.assertEqual([r["status"] for r in runs], ["completed", "completed"])
        self.assertEqual(runs[0]["started_at"], second["started_at"])
        self.assertEqual(runs[1]["started_at"], first["started_at"])
        self.assertEqual(runs[1]["completed_at"], first["completed_at"])
        self.assertNotEqual(runs[0]["id"], runs[1]["id"])
        # newest first across pages of one
        p1 = self.runs_page(key, t["id"], limit=1)
        self.assertEqual(p1["runs"], [runs[0]])
        self.assertTrue(p1["has_more"])
        p2 = self.runs_page(key, t["id"], limit=1, before=p1["next_cursor"])
        self.assertEqual(p2["runs"], [runs[1]])
        self.assertFalse(p2["has_more"])
        self.assertIsNone(p2["next_cursor"])

    def test_patch_pending_to_completed_never_runs(self):
        _, key, _ = self.fresh()
        emp = self.employee(key, "starter")
        self.set_emp_status(key, emp, "offline")
        t = self.create_ok(key, emp, "Done by hand")
        u = self.patch_ok(key, t["id"], {"status": "completed"})
        self.assertEqual(u["status"], "completed")
        self.assertEqual(u["run_count"], 0)
        self.assertIsNone(u["result"])
        for r in self.runs(key, t["id"]):
            self.assertEqual(r["status"], "cancelled", r)
        f = self.create_ok(key, emp, "Given up")
        self.assertEqual(self.patch_ok(key, f["id"], {"status": "failed"})["status"], "failed")
        self.set_emp_status(key, emp, "idle")
        self.runner_passed()
        for tid, status in ((t["id"], "completed"), (f["id"], "failed")):
            now = self.get_task(key, tid)
            self.assertEqual((now["status"], now["run_count"], now["result"]), (status, 0, None))
        # completed -> pending queues it for real
        self.patch_ok(key, t["id"], {"status": "pending"})
        done = self.wait_status(key, t["id"], "completed", run_count=1)
        self.assertTrue(done["result"])
        self.assertEqual(self.runs(key, t["id"])[0]["status"], "completed")

    def test_recurring_waits_for_its_slot_then_null_runs_once(self):
        _, key, _ = self.fresh()
        emp = self.employee(key, "starter")
        now = time.time()
        rule = {"frequency": "daily", "time": hhmm(now + 6 * 3600)}
        t = self.create_ok(key, emp, "Daily digest " + uniq("rn"), recurring=rule)
        self.runner_passed()
        self.assertEqual(self.get_task(key, t["id"]), t, "a recurring task ran before its slot")
        u = self.patch_ok(key, t["id"], {"recurring": None})
        self.assertEqual((u["recurring"], u["next_run_at"]), (None, None))
        done = self.wait_status(key, t["id"], "completed", run_count=1)
        self.assertIsNone(done["next_run_at"])
        self.runner_passed()
        self.assertEqual(self.get_task(key, t["id"])["run_count"], 1)

    def test_recurring_requeued_runs_now_and_keeps_schedule(self):
        _, key, _ = self.fresh()
        emp = self.employee(key, "starter")
        now = time.time()
        rule = {"frequency": "weekly", "day": WEEKDAYS[(datetime.datetime.fromtimestamp(
            now, UTC).weekday() + 3) % 7], "time": "12:00"}
        t0 = time.time()
        t = self.create_ok(key, emp, "Weekly review " + uniq("rq"), recurring=rule)
        self.checkNextRun(t, rule, t0, time.time())
        u = self.patch_ok(key, t["id"], {"status": "completed"})
        self.assertEqual(u["status"], "completed")
        self.assertEqual(u["recurring"], rule)
        self.patch_ok(key, t["id"], {"status": "pending"})
        done = self.wait_status(key, t["id"], "completed", run_count=1)
        # after the run: the first occurrence after the run's start, i.e. the same slot
        self.assertEqual(done["next_run_at"], t["next_run_at"])
        self.assertEqual(done["recurring"], rule)
        self.assertEqual([r["status"] for r in self.runs(key, t["id"]) if r["status"] !=
                          "cancelled"], ["completed"])


# =====================================================================================
# The openai engine (mock): results, cancellation, delete in flight, failures, stats
# =====================================================================================

class TaskEngineTest(TaskHelpers, MockChatTestCase):
    """Live keys go through tests/mock/openai_mock.py; the task text is its last user message."""

    PAUSE_MS = 3000

    def fresh(self, credits=100000):
        org = self.new_org("tke")
        return self.server.create_key(org, credits=credits), org

    def requests_for(self, token):
        return [r for r in self.mock.requests() if token in (r.get("last_user") or "")]

    def start_slow(self, key, emp, token, **fields):
        """A task whose engine call pauses PAUSE_MS; returns it once in progress."""
        t = self.create_ok(key, emp, "Slow job " + token,
                           description="Take your time [[pause:%d]]" % self.PAUSE_MS, **fields)
        t0 = time.time()
        running = self.wait_status(key, t["id"], "in_progress", timeout=10)
        self.assertLess(time.time() - t0, self.PAUSE_MS / 1000.0 - 0.5,
                        "the run started too late to be caught in progress")
        return running, t0

    def test_result_is_the_engine_reply(self):
        key, _ = self.fresh()
        emp = self.employee(key, "starter")
        b0 = self.balance(key)
        token = uniq("eng")
        t = self.create_ok(key, emp, "Summarize " + token,
                           description="Use the numbers in the sheet " + token[-6:])
        done = self.wait_status(key, t["id"], "completed")
        reqs = self.requests_for(token)
        self.assertEqual(len(reqs), 1, "one engine call per run")
        last_user = reqs[0]["last_user"]
        self.assertIn("Summarize " + token, last_user, "the task title is sent")
        self.assertIn("Use the numbers in the sheet " + token[-6:], last_user,
                      "the task description is sent")
        reply = reqs[0]["reply"]
        self.assertEqual(done["result"], reply["content"])
        self.assertEqual(done["credits_used"], credits_of(reply["usage"]))
        self.assertEqual(self.balance(key), b0 - done["credits_used"])
        runs = self.runs(key, t["id"])
        self.assertEqual(len(runs), 1)
        self.assertEqual((runs[0]["status"], runs[0]["result"], runs[0]["credits_used"]),
                         ("completed", reply["content"], done["credits_used"]))

    def test_in_progress_rules_and_cancel_by_failed(self):
        key, _ = self.fresh()
        emp = self.employee(key, "starter")
        b0 = self.balance(key)
        token = uniq("cf")
        running, t0 = self.start_slow(key, emp, token)
        self.assertEqual(running["run_count"], 1)
        self.assertIsNotNone(running["started_at"])
        self.assertIsNone(running["completed_at"], "completed_at while the first run is going")
        self.assertIsNone(running["result"])
        runs = self.runs(key, running["id"])
        self.assertEqual(len(runs), 1)
        self.assertEqual((runs[0]["status"], runs[0]["completed_at"], runs[0]["started_at"]),
                         ("in_progress", None, running["started_at"]))
        self.assertEqual(self.emp_detail(key, emp)["status"], "active")
        self.assertIn(running["id"], self.all_task_ids(key, status="in_progress"))
        for body in ({"status": "in_progress"}, {"status": "pending"},
                     {"status": "pending", "title": "changed"}):
            with self.subTest(body=body):
                self.assertError(self.patch_task(key, running["id"], body), 400,
                                 "invalid_request", "status")
        now = self.get_task(key, running["id"])
        self.assertEqual((now["status"], now["title"]), ("in_progress", running["title"]))
        # cancel
        u = self.patch_ok(key, running["id"], {"status": "failed"})
        self.assertEqual(u["status"], "failed")
        self.assertIsNone(u["result"])
        runs = self.runs(key, running["id"])
        self.assertEqual(len(runs), 1)
        self.assertEqual((runs[0]["status"], runs[0]["result"], runs[0]["credits_used"]),
                         ("cancelled", None, 0))
        self.assertIsNotNone(runs[0]["completed_at"])
        # the late engine answer changes nothing
        self.wait_run_end_logged(running["id"])
        late = self.get_task(key, running["id"])
        self.assertEqual((late["status"], late["run_count"], late["result"], late["credits_used"]),
                         ("failed", 1, None, 0))
        self.assertEqual(self.runs(key, running["id"]), runs)
        self.assertEqual(len(self.requests_for(token)), 1)
        self.assertEqual(self.balance(key), b0, "a cancelled run was charged")
        self.wait_value(lambda: self.emp_detail(key, emp)["status"], "idle",
                        what="employee status after the cancelled run")

    def test_cancel_by_completed(self):
        key, _ = self.fresh()
        emp = self.employee(key, "starter")
        b0 = self.balance(key)
        token = uniq("cc")
        running, t0 = self.start_slow(key, emp, token)
        u = self.patch_ok(key, running["id"], {"status": "completed"})
        self.assertEqual((u["status"], u["result"]), ("completed", None))
        self.wait_run_end_logged(running["id"])
        late = self.get_task(key, running["id"])
        self.assertEqual((late["status"], late["run_count"], late["result"], late["credits_used"]),
                         ("completed", 1, None, 0), "the discarded answer was kept")
        runs = self.runs(key, running["id"])
        self.assertEqual([(r["status"], r["result"], r["credits_used"]) for r in runs],
                         [("cancelled", None, 0)])
        self.assertEqual(self.balance(key), b0)

    def test_delete_in_progress(self):
        key, _ = self.fresh()
        emp = self.employee(key, "starter")
        b0 = self.balance(key)
        token = uniq("dl")
        running, t0 = self.start_slow(key, emp, token)
        self.assertEqual(self.assertJson(self.delete_task(key, running["id"])),
                         {"id": running["id"], "deleted": True})
        self.assertError(self.server.get("/v1/tasks/" + running["id"], key=key), 404,
                         "task_not_found", "id")
        self.wait_run_end_logged(running["id"])
        self.assertError(self.server.get("/v1/tasks/" + running["id"], key=key), 404,
                         "task_not_found", "id")
        self.assertError(self.server.get("/v1/tasks/%s/runs" % running["id"], key=key), 404,
                         "task_not_found", "id")
        self.assertNotIn(running["id"], self.all_task_ids(key))
        self.assertEqual(len(self.requests_for(token)), 1, "a deleted task ran again")
        self.assertEqual(self.balance(key), b0, "a deleted task's run was charged")

    def test_engine_failure(self):
        key, _ = self.fresh()
        emp = self.employee(key, "starter")
        b0 = self.balance(key)
        token = uniq("ef")
        t = self.create_ok(key, emp, "Doomed " + token, description="This breaks [[fail:500]]")
        failed = self.wait_status(key, t["id"], "failed", timeout=30)
        self.assertEqual(failed["run_count"], 1)
        self.assertIsNone(failed["result"])
        self.assertIsInstance(failed["error"], str)
        self.assertTrue(failed["error"].strip())
        self.assertEqual(failed["credits_used"], 0)
        self.assertIsNotNone(failed["completed_at"])
        runs = self.runs(key, t["id"])
        self.assertEqual(len(runs), 1)
        self.assertEqual((runs[0]["status"], runs[0]["result"], runs[0]["error"],
                          runs[0]["credits_used"]), ("failed", None, failed["error"], 0))
        self.assertGreaterEqual(len(self.requests_for(token)), 1)
        self.assertEqual(self.balance(key), b0, "a failed run was charged")
        self.runner_passed()
        self.assertEqual(self.get_task(key, t["id"])["run_count"], 1)
        # its event (contract §15): task.failed with the task as it failed, once
        evs = [e for e in self.assertJson(self.server.get("/v1/events?limit=100", key=key))
               ["events"] if e["data"]["object"].get("id") == t["id"]]
        self.assertEqual([e["type"] for e in evs], ["task.failed"])
        self.assertEqual(evs[0]["data"]["object"]["error"], failed["error"])

    def test_stats_count_finished_runs(self):
        key, _ = self.fresh()
        emp = self.new_employee(key)["id"]
        bystander = self.new_employee(key)["id"]
        st0 = self.emp_stats(key, emp)
        self.assertEqual((st0["tasks_completed"], st0["tasks_failed"]), (0, 0))
        self.assertEqual(self.emp_detail(key, emp)["stats"]["tasks_completed_today"], 0)
        ok = self.create_ok(key, emp, "Fine " + uniq("st"))
        bad = self.create_ok(key, emp, "Broken " + uniq("st"), description="[[fail:503]]")
        self.wait_status(key, ok["id"], "completed")
        self.wait_status(key, bad["id"], "failed", timeout=30)
        st = self.emp_stats(key, emp)
        self.assertEqual((st["tasks_completed"], st["tasks_failed"]), (1, 1))
        self.assertEqual(sum(b["tasks_completed"] for b in st["series"]), 1)
        self.assertEqual(self.emp_detail(key, emp)["stats"]["tasks_completed_today"], 1)
        for period in ("24h", "30d"):
            st = self.assertJson(self.server.get("/v1/employees/%s/stats?period=%s"
                                                 % (emp, period), key=key))
            self.assertEqual((st["tasks_completed"], st["tasks_failed"]), (1, 1), period)
        # a re-run that completes counts again
        self.patch_ok(key, ok["id"], {"status": "pending"})
        self.wait_status(key, ok["id"], "completed", run_count=2)
        st = self.emp_stats(key, emp)
        self.assertEqual((st["tasks_completed"], st["tasks_failed"]), (2, 1))
        self.assertEqual(self.emp_detail(key, emp)["stats"]["tasks_completed_today"], 2)
        other = self.emp_stats(key, bystander)
        self.assertEqual((other["tasks_completed"], other["tasks_failed"]), (0, 0))


class TaskPriorityTest(TaskHelpers, MockChatTestCase):
    """One worker: the order in which the engine is called is the order tasks are taken."""

    mock_env = {"WORKFORCE_TASK_WORKERS": "1"}
    single_node = True  # one worker in all: one node (two would be two workers)

    def test_order_priority_due_at_creation(self):
        key = self.server.create_key(self.new_org("tkp"), credits=100000)
        emp = self.new_employee(key)["id"]
        self.set_emp_status(key, emp, "offline")
        token = uniq("prio")
        specs = [  # (label, priority or None for the default, due_at)
            ("L1", "low", None),
            ("M1", None, None),
            ("H1", "high", "2031-06-01T00:00:00Z"),
            ("U1", "urgent", None),
            ("M2", "medium", "2031-01-01T00:00:00Z"),
            ("H2", "high", None),
            ("H3", "high", "2030-06-01T00:00:00+00:00"),
            ("M3", "medium", "2031-01-01T00:00:00Z"),
            ("U2", "urgent", "2031-01-01T00:00:00Z"),
            ("L2", "low", "2030-01-01T00:00:00Z"),
            ("M4", None, None),
            ("H4", "high", "2030-06-01T00:00:00Z"),
        ]
        expected = ["U2", "U1", "H3", "H4", "H1", "H2", "M2", "M3", "M1", "M4", "L2", "L1"]
        ids = {}
        for label, prio, due in specs:
            fields = {"description": "step %s [[slow:5]]" % label}
            if prio is not None:
                fields["priority"] = prio
            if due is not None:
                fields["due_at"] = due
            ids[label] = self.create_ok(key, emp, "%s-%s job" % (token, label), **fields)["id"]
            next_millisecond()
        self.runner_passed()
        self.assertEqual(self.requests_for(token), [], "a task ran for an offline employee")
        self.set_emp_status(key, emp, "idle", also=("active",))
        done = {label: self.wait_status(key, tid, "completed", timeout=60)
                for label, tid in ids.items()}
        seen = [re.search(r"%s-(\w\d)" % re.escape(token), r["last_user"]).group(1)
                for r in self.requests_for(token)]
        self.assertEqual(seen, expected, "engine calls out of order")
        starts = [parse_ts(done[x]["started_at"]) for x in expected]
        ends = [parse_ts(done[x]["completed_at"]) for x in expected]
        self.assertEqual(starts, sorted(starts), "runs started out of order")
        for i in range(len(expected) - 1):
            self.assertLessEqual(ends[i], starts[i + 1],
                                 "one worker ran %s and %s at once" % (expected[i],
                                                                       expected[i + 1]))
        for x in expected:
            self.assertEqual(done[x]["run_count"], 1)

    def requests_for(self, token):
        return [r for r in self.mock.requests() if token in (r.get("last_user") or "")]


# =====================================================================================
# kill -9 during a run, and pending tasks across a crash
# =====================================================================================

class TaskRestartTest(TaskHelpers, MockChatTestCase):

    def requests_for(self, token):
        return [r for r in self.mock.requests() if token in (r.get("last_user") or "")]

    def test_kill9_during_run_runs_again(self):
        s = self.server
        key = s.create_key(self.new_org("tkk"), credits=100000)
        emp = self.employee(key, "starter")
        b0 = self.balance(key)
        token = uniq("kill")
        t = self.create_ok(key, emp, "Survive " + token, description="Slowly [[pause:4000]]")
        running = self.wait_status(key, t["id"], "in_progress", timeout=10)
        # in_progress is stored before the engine is called: kill once the call is under way
        deadline = time.time() + 10
        while not self.requests_for(token) and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(len(self.requests_for(token)), 1, "the first run reached the engine")
        s.kill()
        self.assertFalse(s.alive())
        s.start()
        done = self.wait_status(key, t["id"], "completed", timeout=40, run_count=2)
        runs = self.runs(key, t["id"])
        self.assertEqual([r["status"] for r in runs], ["completed", "failed"])
        lost, ok = runs[1], runs[0]
        self.assertEqual(lost["started_at"], running["started_at"])
        self.assertIn("interrupt", lost["error"].lower(), "error of a run cut by a restart")
        self.assertEqual((lost["result"], lost["credits_used"]), (None, 0))
        self.assertIsNotNone(lost["completed_at"])
        reqs = self.requests_for(token)
        self.assertEqual(len(reqs), 2, "one engine call per run")
        self.assertEqual(ok["result"], reqs[-1]["reply"]["content"])
        self.assertEqual(done["result"], ok["result"])
        self.assertIsNone(done["error"])
        self.assertEqual(done["started_at"], ok["started_at"])
        self.assertEqual(done["credits_used"], ok["credits_used"])
        self.assertGreaterEqual(ok["credits_used"], 1)
        self.assertEqual(self.balance(key), b0 - done["credits_used"])
        self.wait_value(lambda: self.emp_detail(key, emp)["status"], "idle",
                        what="employee status after the restart")

    def test_kill9_keeps_pending_tasks(self):
        s = self.server
        org = self.new_org("tkq")
        key = s.create_key(org, mode="test")
        emp = self.employee(key, "starter")
        self.set_emp_status(key, emp, "offline")
        made = {}
        for i in range(20):
            t = self.create_ok(key, emp, "Queued %02d" % i, priority=PRIORITIES[i % 4],
                               description="Item %d" % i,
                               due_at=None if i % 3 else "2030-0%d-01T00:00:00Z" % (1 + i % 9))
            made[t["id"]] = t
        s.kill()
        s.start()
        for tid, t in made.items():
            self.assertEqual(self.get_task(key, tid), t, "a pending task changed across kill -9")
        self.assertEqual(set(self.all_task_ids(key, status="pending")), set(made))
        self.assertEqual(self.emp_detail(key, emp)["status"], "offline")
        self.runner_passed()
        self.assertEqual(set(self.all_task_ids(key, status="pending")), set(made))
        self.set_emp_status(key, emp, "idle", also=("active",))
        for tid in made:
            done = self.wait_status(key, tid, "completed", timeout=30)
            self.assertEqual(done["run_count"], 1)
        self.assertEqual(set(self.all_task_ids(key, status="completed")), set(made))


# =====================================================================================
# A recurring task at a real clock minute (slow: up to ~75 s)
# =====================================================================================

class TaskRecurringSlowTest(TaskHelpers, ChatTestCase):

    def test_daily_slot_runs_once_and_moves_a_day(self):
        key = self.server.create_key(self.new_org("tks"), mode="test")
        emp = self.employee(key, "starter", 0)
        away = self.employee(key, "starter", 1)
        self.set_emp_status(key, away, "offline")
        now = time.time()
        slot = (int(now // 60) + 1) * 60
        if slot - now < 10:
            slot += 60
        rule = {"frequency": "daily", "time": hhmm(slot)}
        t = self.create_ok(key, emp, "Standup notes " + uniq("sl"), recurring=rule)
        w = self.create_ok(key, away, "Standup notes, away " + uniq("sl"), recurring=rule)
        for x in (t, w):
            self.assertEqual(x["next_run_at"], iso(slot))
            self.assertEqual((x["status"], x["run_count"]), ("pending", 0))
        # up to 2 s before the slot it keeps not running: checked all along, not once
        while time.time() < slot - 2:
            self.assertEqual(self.get_task(key, t["id"]), t, "it ran before its slot")
            time.sleep(0.25)
        done = self.wait_task(key, t["id"], lambda x: x["run_count"] >= 1 and
                              x["status"] == "completed", timeout=slot + 45 - time.time(),
                              what="the run at %s" % iso(slot))
        self.assertGreaterEqual(parse_ts(done["started_at"]), slot, "started before its slot")
        self.assertLess(parse_ts(done["started_at"]), slot + 45)
        self.assertEqual(done["next_run_at"], iso(slot + 86400))
        self.assertEqual(done["recurring"], rule)
        self.assertTrue(done["result"])
        self.runner_passed()
        again = self.get_task(key, t["id"])
        self.assertEqual(again["run_count"], 1, "one slot, one run")
        self.assertEqual([r["status"] for r in self.runs(key, t["id"])], ["completed"])
        # the offline employee's occurrence waits, then runs once when it is back
        waiting = self.get_task(key, w["id"])
        self.assertEqual((waiting["status"], waiting["run_count"]), ("pending", 0))
        self.set_emp_status(key, away, "idle", also=("active",))  # its task may start at once
        wd = self.wait_status(key, w["id"], "completed", timeout=20)
        self.assertEqual(wd["run_count"], 1)
        self.assertEqual(wd["next_run_at"], iso(slot + 86400))
        self.runner_passed()
        self.assertEqual(self.get_task(key, w["id"])["run_count"], 1, "a missed slot ran twice")
        # recurring null: one-time now, and a completed one-time task does not run again
        u = self.patch_ok(key, t["id"], {"recurring": None})
        self.assertEqual((u["recurring"], u["next_run_at"], u["status"]), (None, None, "completed"))
        self.runner_passed()
        self.assertEqual(self.get_task(key, t["id"])["run_count"], 1)
        rule2 = {"frequency": "weekdays", "time": "07:07"}
        t0 = time.time()
        u = self.patch_ok(key, t["id"], {"recurring": rule2})
        self.checkNextRun(u, rule2, t0, time.time())


if __name__ == "__main__":
    unittest.main()
