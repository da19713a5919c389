# SPDX-License-Identifier: MIT
"""The ledger of every credit (contract §21), apart from Stripe (test_billing.py).

- Each piece of work writes its entries: a chat reply (its hold, referencing the reply), a task
  run, a workflow step; their employee; usage summed from them by day and by employee.
- The command line: a rise is a `grant`, a fall an `adjustment`; `credits ledger` prints them;
  `credits check` agrees with the balances, and fails when a balance is changed behind the
  ledger's back (so the check that runs after every test class can fail).
- `account.credits_added` and `account.credits_low` (once per crossing of WORKFORCE_CREDITS_LOW).
- Test mode is free and apart: test work writes no entry, a test key reads the test ledger.
- The list's filters and pages, and its bad parameters.
"""

import sqlite3
import time

from chatlib import ChatTestCase, uniq
from harness import sqlite_only


class LedgerTest(ChatTestCase):
    server_env = dict(ChatTestCase.server_env, WORKFORCE_CREDITS_LOW="95")

    def ledger(self, key, **query):
        q = "&".join("%s=%s" % kv for kv in query.items())
        return self.assertJson(self.server.get("/v1/account/credit_transactions" +
                                               ("?" + q if q else ""), key=key))

    def entries(self, key, **query):
        items, before = [], None
        while True:
            page = self.ledger(key, **dict(query, **({"before": before} if before else {})))
            items += page["credit_transactions"]
            if not page["has_more"]:
                return items
            before = page["next_cursor"]

    def check_ok(self):
        p = self.server.cli("credits", "check")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_chat_writes_its_entry(self):
        org = uniq("lg")
        key = self.server.create_key(org, credits=100)
        emp = self.employee(key)
        first = self.entries(key)
        self.assertEqual([(e["reason"], e["amount"], e["balance_after"]) for e in first],
                         [("grant", 100, 100)], "the organization's first balance is a grant")
        m = self.chat_ok(key, emp, "Ledger, please")
        after = self.entries(key)
        spent = [e for e in after if e["reason"] == "chat"]
        self.assertEqual(sum(-e["amount"] for e in spent), m["credits_used"])
        self.assertTrue(all(e["reference"] == {"type": "message", "id": m["id"]} for e in spent),
                        spent)
        self.assertTrue(all(e["employee_id"] == emp for e in spent))
        self.assertEqual(after[0]["balance_after"], self.balance(key), "newest first")
        self.assertEqual(sum(e["amount"] for e in after), self.balance(key))
        for e in after:
            self.assertEqual(set(e), {"id", "object", "amount", "balance_after", "shortfall",
                                      "reason", "reference", "employee_id", "mode",
                                      "created_at"})
            self.assertEqual((e["object"], e["mode"], e["shortfall"]),
                             ("credit_transaction", "live", 0))
        self.check_ok()

    def test_usage_by_day_and_employee(self):
        org = uniq("lu")
        key = self.server.create_key(org, credits=1000)
        a, b = self.employee(key, index=0), self.employee(key, index=1)
        used = {a: 0, b: 0}
        for emp, n in ((a, 2), (b, 1)):
            for i in range(n):
                used[emp] += self.chat_ok(key, emp, "Usage %d" % i)["credits_used"]
        by_emp = self.assertJson(self.server.get("/v1/account/usage?group_by=employee&period=24h",
                                                 key=key))
        self.assertEqual((by_emp["period"], by_emp["group_by"]), ("24h", "employee"))
        got = {i["key"]: (i["credits"], i["count"]) for i in by_emp["items"]}
        self.assertEqual(got, {a: (used[a], 2), b: (used[b], 1)})
        self.assertEqual(by_emp["items"][0]["key"], a, "most credits first")
        by_day = self.assertJson(self.server.get("/v1/account/usage", key=key))
        self.assertEqual((by_day["period"], by_day["group_by"]), ("30d", "day"))
        today = time.strftime("%Y-%m-%d", time.gmtime())
        self.assertEqual([(i["key"], i["credits"], i["count"]) for i in by_day["items"]],
                         [(today, used[a] + used[b], 3)])
        chat = [e for e in self.entries(key) if e["reason"] == "chat"]
        self.assertEqual(sum(-e["amount"] for e in chat), used[a] + used[b],
                         "usage is summed from the ledger")
        for q, param in (("period=1y", "period"), ("group_by=week", "group_by"),
                         ("period=24h&period=7d", "period"), ("nope=1", "nope")):
            r = self.server.get("/v1/account/usage?" + q, key=key)
            self.assertJsonError(r, 400, "invalid_request", param)

    def test_task_run_and_workflow_step(self):
        org = uniq("lt")
        key = self.server.create_key(org, credits=500)
        emp = self.employee(key)
        t = self.assertJson(self.server.post("/v1/tasks", {"employee_id": emp,
                                                           "title": "Ledger task"}, key=key))
        done = self.poll(lambda: (lambda x: x if x["status"] in ("completed", "failed") else None)(
            self.assertJson(self.server.get("/v1/tasks/" + t["id"], key=key))), "task done",
            timeout=60)
        self.assertEqual(done["status"], "completed", done)
        runs = self.assertJson(self.server.get("/v1/tasks/%s/runs" % t["id"], key=key))
        run_id = runs["runs"][0]["id"]
        task_entries = [e for e in self.entries(key) if e["reason"] == "task_run"]
        self.assertTrue(task_entries)
        self.assertTrue(all(e["reference"] == {"type": "task_run", "id": run_id} and
                            e["employee_id"] == emp for e in task_entries), task_entries)
        self.assertEqual(sum(-e["amount"] for e in task_entries), done["credits_used"])
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "Ledger flow", "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp, "action": "respond", "input": "Some text."}]},
            key=key))
        run = self.assertJson(self.server.post("/v1/workflows/%s/run" % wf["id"], {}, key=key))
        finished = self.poll(lambda: (lambda x: x if x["status"] in ("completed", "failed")
                                      else None)(self.assertJson(self.server.get(
                                          "/v1/workflows/%s/runs/%s" % (wf["id"], run["id"]),
                                          key=key))), "run done", timeout=60)
        self.assertEqual(finished["status"], "completed", finished)
        steps = self.entries(key, reason="workflow_step")
        self.assertEqual([e["reference"] for e in steps],
                         [{"type": "workflow_run", "id": run["id"]}])
        self.assertEqual(-steps[0]["amount"], finished["credits_used"])
        self.assertEqual(sum(e["amount"] for e in self.entries(key)), self.balance(key))
        self.check_ok()

    def test_command_line_grant_and_adjustment(self):
        org = uniq("lc")
        key = self.server.create_key(org, credits=10)
        self.set_credits(org, 250)
        self.set_credits(org, 40)
        got = [(e["reason"], e["amount"], e["balance_after"], e["reference"])
               for e in self.entries(key)]
        self.assertEqual(got, [("adjustment", -210, 40, None), ("grant", 240, 250, None),
                               ("grant", 10, 10, None)])
        p = self.server.cli("credits", "ledger", "--org", org, "--limit", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [line.split("\t") for line in p.stdout.splitlines()]
        self.assertEqual([(r[2], r[3], r[4]) for r in rows],
                         [("adjustment", "-210", "40"), ("grant", "+240", "250")])
        p = self.server.cli("credits", "ledger", "--org", "no-such-org")
        self.assertNotEqual(p.returncode, 0)
        self.check_ok()

    def test_events_added_and_low(self):
        org = uniq("le")
        key = self.server.create_key(org, credits=96)
        emp = self.employee(key)
        self.set_credits(org, 97)  # a grant of 1: credits_added
        for i in range(4):  # 97 -> 93: below 95 once
            self.chat_ok(key, emp, "Low %d" % i)
        events = self.assertJson(self.server.get("/v1/events", key=key))["events"]
        low = [e for e in events if e["type"] == "account.credits_low"]
        added = [e for e in events if e["type"] == "account.credits_added"]
        self.assertEqual(len(low), 1, "once per crossing, not again below it")
        obj = low[0]["data"]["object"]
        self.assertEqual(obj["object"], "credit_transaction")
        self.assertTrue(obj["balance_after"] < 95 <= obj["balance_after"] - obj["amount"], obj)
        self.assertEqual([e["data"]["object"]["amount"] for e in added], [1])
        self.set_credits(org, 500)
        self.chat_ok(key, emp, "Up again")  # 500 -> 499: no crossing
        events = self.assertJson(self.server.get("/v1/events?type=account.credits_low",
                                                 key=key))["events"]
        self.assertEqual(len(events), 1)

    def test_test_mode_is_free_and_apart(self):
        org = uniq("lm")
        live = self.server.create_key(org, credits=50)
        test = self.server.create_key(org, mode="test")
        emp = self.employee(test)
        self.chat_ok(test, emp, "Free?")
        self.assertEqual(self.entries(test), [], "test work writes no entry")
        self.assertEqual(self.balance(test), 0)
        self.assertEqual([e["reason"] for e in self.entries(live)], ["grant"])

    def test_list_filters_pages_and_errors(self):
        org = uniq("lf")
        key = self.server.create_key(org, credits=300)
        emp = self.employee(key)
        for i in range(3):
            self.chat_ok(key, emp, "Page %d" % i)
        every = self.entries(key)
        paged = self.entries(key, limit=1)
        self.assertEqual([e["id"] for e in paged], [e["id"] for e in every])
        self.assertEqual([e["created_at"] for e in every],
                         sorted((e["created_at"] for e in every), reverse=True))
        self.assertEqual({e["reason"] for e in self.entries(key, reason="grant")}, {"grant"})
        self.assertEqual(self.entries(key, since=int(time.time()) + 3600), [])
        for q, param in (("reason=gift", "reason"), ("since=soon", "since"),
                         ("limit=0", "limit"), ("before=zzz", "before")):
            r = self.server.get("/v1/account/credit_transactions?" + q, key=key)
            self.assertJsonError(r, 400, "invalid_request", param)
        scoped = self.server.create_key(org, scopes="chat")
        r = self.server.get("/v1/account/credit_transactions", key=scoped)
        self.assertJsonError(r, 403, "permission_denied")
        billing = self.server.create_key(org, scopes="billing")
        self.assertEqual(len(self.entries(billing)), len(every))
        other = self.server.create_key(uniq("lo"), credits=5)
        self.assertEqual([e["amount"] for e in self.entries(other)], [5],
                         "another organization's ledger is its own")

    @sqlite_only("it writes the SQLite file behind the server")
    def test_check_finds_a_balance_changed_behind_the_ledger(self):
        org = uniq("lx")
        self.server.create_key(org, credits=70)
        self.check_ok()
        with sqlite3.connect(self.server.db) as db:
            db.execute("UPDATE orgs SET credits = 71 WHERE slug = ?", (org,))
        p = self.server.cli("credits", "check")
        self.assertEqual(p.returncode, 1)
        self.assertIn("balance 71\tledger 70", p.stdout)
        with sqlite3.connect(self.server.db) as db:
            db.execute("UPDATE orgs SET credits = 70 WHERE slug = ?", (org,))
        self.check_ok()
