# SPDX-License-Identifier: MIT
"""Workflow runs (issue 10, contract §12), black-box: POST /v1/workflows/{id}/run (input,
dry_run), the run record and its steps, the history and its `before` cursor, GET one run,
cancel, the webhook trigger POST /v1/hooks/{token}, and scheduled workflows.

- Built-in engine (no language model): every action done for real (respond, summarize,
  classify, extract, draft_email, search_knowledge, create_task), templates, conditions,
  dry runs, validation, isolation, the `workflows` scope, offline employees holding a run,
  the run's snapshot of its definition, cancel, delete, credits (live keys charged, test keys
  free, no credits: 402, credits running out mid-run), the rendered-input cap, employee
  statistics, disabled workflows, webhooks (bodies, 1 MiB cap, rotation), the queued answer
  and consistent snapshots of a run while it executes.
- The openai engine against tests/mock/openai_mock.py (live keys; WORKFORCE_LLM_RETRIES=0 so
  that one step attempt is one model request): JSON actions asked with response_format
  json_object and checked, one repair (priced per call), engine failures retried twice with
  backoff, cancel of a step in flight and during a backoff, delete during a step, the
  employee active during its step, kill -9 and SIGTERM during a step.
- Schedules: an occurrence in the past (set in the database while the server is stopped)
  gives exactly one run at the next start; a disabled scheduled workflow gets none.

"Nothing ran" is shown by a witness: runs of a one-step workflow of another organization
(test mode, built-in engine) created afterwards, at once, that complete. Organizations are
served in turns (one unit each, least recently served first) and, within one, steps in the
order they became ready, so an organization's first ready steps have been claimed (and show
it) by then.
"""

import base64
import itertools
import json
import math
import re
import sqlite3
import threading
import time
import urllib.parse
import uuid

from chatlib import ChatTestCase, MockChatTestCase, uniq
from harness import MIB, TS_RE, next_millisecond, parse_ts, raw_head, read_response, sqlite_only

RUN_ID_RE = r"^run_[A-Za-z0-9]{20,}$"
TASK_ID_RE = r"^task_[A-Za-z0-9]{20,}$"
RUN_FIELDS = {"id", "workflow_id", "status", "trigger", "steps", "credits_used", "error",
              "created_at", "started_at", "completed_at"}
STEP_FIELDS = {"index", "employee_id", "action", "status", "input", "output", "error",
               "attempts", "credits_used", "started_at", "completed_at", "stop_reason",
               "tool_calls"}
STOP_REASONS = (None, "completed", "max_steps", "repeated_call", "timeout",
                "insufficient_credits")
RUN_STATUSES = ("queued", "running", "completed", "failed", "cancelled")
STEP_STATUSES = ("pending", "running", "completed", "skipped", "failed", "cancelled")
ENDED = ("completed", "failed", "cancelled")
HIT_FIELDS = {"document_id", "document_name", "chunk_id", "content", "score", "tags"}
NO_WF = "wf_" + "Z" * 24
NO_RUN = "run_" + "Z" * 24

# witness(): runs made at once (see there).
WITNESSES = 4

BILLING_LABELS = [
    {"name": "billing", "description": "payments, invoices, charges, refunds and receipts"},
    {"name": "bug", "description": "the software is broken: crashes, errors, pages not loading"},
    {"name": "shipping", "description": "delivery of parcels, tracking numbers, couriers"},
]


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def say(*texts):
    """The mock's [[say:...]] marker: the Nth request holding it gets the Nth text."""
    return "[[say:%s]]" % ",".join(b64(t) for t in texts)


def price(usages):
    """max(1, ceil(total_tokens / 1000)) of the usages summed (contract §3: the price of one
    language-model call when given one usage)."""
    total = sum(u["prompt_tokens"] + u["completion_tokens"] for u in usages)
    return max(1, math.ceil(total / 1000))


def sentences(text):
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


# =====================================================================================
# Helpers
# =====================================================================================

class RunHelpers:
    """Mixed into ChatTestCase / MockChatTestCase."""

    # -- organizations, employees, workflows --

    def fresh(self, mode="test", credits=100000, tier="agency"):
        """A key of a new organization: (key, org)."""
        org = uniq("wfr")
        return self.server.create_key(org, mode=mode, credits=credits, tier=tier), org

    def emp(self, key, index=0, tier="starter"):
        return self.employee(key, tier, index)

    def set_emp_status(self, key, emp, status, also=()):
        """PATCH the employee's status; the answer shows 'status' (or one of 'also': the
        derived status, when a worker may take its waiting step at once)."""
        r = self.server.patch("/v1/employees/" + emp, {"status": status}, key=key)
        self.assertIn(self.assertJson(r)["status"], (status,) + tuple(also))

    def emp_status(self, key, emp):
        return self.assertJson(self.server.get("/v1/employees/" + emp, key=key))["status"]

    def step(self, emp, action="respond", input="{{trigger.text}}", **kw):
        s = {"employee_id": emp, "action": action, "input": input}
        s.update(kw)
        return s

    def make_wf(self, key, steps, trigger=None, **kw):
        body = {"name": kw.pop("name", "Run flow " + uniq("n")),
                "trigger": trigger or {"type": "manual"}, "steps": steps}
        body.update(kw)
        return self.assertJson(self.server.post("/v1/workflows", body, key=key))

    def get_wf(self, key, wf_id):
        return self.assertJson(self.server.get("/v1/workflows/" + wf_id, key=key))

    # -- runs --

    def run_req(self, key, wf_id, body=None):
        return self.server.post("/v1/workflows/%s/run" % wf_id, body, key=key)

    def start(self, key, wf_id, input=None, **kw):
        """A manual run: the queued run as answered (checked)."""
        body = dict(kw)
        if input is not None:
            body["input"] = input
        run = self.assertJson(self.run_req(key, wf_id, body))
        self.checkRun(run, wf_id)
        self.assertEqual(run["trigger"]["type"], "manual")
        self.assertIsNone(run["trigger"]["event"])
        self.assertEqual(run["trigger"]["data"], input if input is not None else {})
        # The answer is read after the runner was woken, so a fast run may already show
        # progress: the queued state is checked by test_answer_is_the_queued_run and on
        # held runs (an offline employee), where it is certain.
        return run

    def checkQueued(self, run):
        self.assertEqual(run["status"], "queued", run)
        self.assertIsNone(run["started_at"])
        self.assertIsNone(run["completed_at"])
        self.assertIsNone(run["error"])
        self.assertEqual(run["credits_used"], 0)
        for s in run["steps"]:
            self.assertEqual((s["status"], s["input"], s["output"], s["error"], s["attempts"],
                              s["credits_used"], s["started_at"], s["completed_at"]),
                             ("pending", None, None, None, 0, 0, None, None), s)
        return run

    def get_run(self, key, wf_id, run_id):
        run = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf_id, run_id),
                                              key=key))
        self.checkRun(run, wf_id)
        self.assertEqual(run["id"], run_id)
        return run

    def wait_run(self, key, wf_id, run_id, pred, what, timeout=30.0, step=0.05):
        """Poll GET .../runs/{run_id} until pred(run); fails with the last state."""
        deadline = time.time() + timeout
        while True:
            run = self.get_run(key, wf_id, run_id)
            if pred(run):
                return run
            if time.time() > deadline:
                self.fail("run %s: %s not reached within %.0fs; last: %s\n%s"
                          % (run_id, what, timeout, json.dumps(run)[:3000],
                             self.server.log_tail(20)))
            time.sleep(step)

    def wait_ended(self, key, wf_id, run_id, status=None, timeout=30.0):
        run = self.wait_run(key, wf_id, run_id, lambda r: r["status"] in ENDED,
                            "the end of the run", timeout)
        if status is not None:
            self.assertEqual(run["status"], status, json.dumps(run)[:3000])
        self.checkEnded(run)
        return run

    def run_and_wait(self, key, wf_id, input=None, status="completed", timeout=30.0):
        run = self.start(key, wf_id, input)
        return self.wait_ended(key, wf_id, run["id"], status, timeout)

    def runs_page(self, key, wf_id, **q):
        qs = urllib.parse.urlencode(q)
        body = self.assertJson(self.server.get("/v1/workflows/%s/runs%s"
                                               % (wf_id, "?" + qs if qs else ""), key=key))
        self.assertEqual(set(body), {"runs", "has_more", "next_cursor"}, body)
        for r in body["runs"]:
            self.checkRun(r, wf_id)
        return body

    def all_runs(self, key, wf_id):
        out, before = [], None
        for _ in range(100):
            q = {"limit": 100}
            if before:
                q["before"] = before
            body = self.runs_page(key, wf_id, **q)
            out += body["runs"]
            if not body["has_more"]:
                return out
            before = body["next_cursor"]
        self.fail("run pagination does not end")

    def cancel(self, key, wf_id, run_id):
        return self.server.post("/v1/workflows/%s/runs/%s/cancel" % (wf_id, run_id), {}, key=key)

    def witness(self):
        """Nothing else is runnable: WITNESSES runs of another organization's one-step workflow
        (test mode, built-in engine), made now, at once, complete. Organizations are served in
        turns, one unit each (within one, steps in the order they became ready): between two
        of the witness runs' claims every other organization with a ready step is served."""
        w = getattr(self.server, "wf_witness", None)
        if w is None:
            wkey, _ = self.fresh("test")
            wf = self.make_wf(wkey, [self.step(self.emp(wkey), "extract", "Email: w@x.org",
                                               options={"fields": {"email": "email"}})])
            w = self.server.wf_witness = (wkey, wf["id"])
        runs = [self.start(w[0], w[1], {"n": uniq("w")}) for _ in range(WITNESSES)]
        for run in runs:
            done = self.wait_ended(w[0], w[1], run["id"], "completed", 60)
            self.assertEqual(done["steps"][0]["output"], {"email": "w@x.org"})

    # -- webhooks --

    def hook_path(self, wf):
        url = wf["webhook_url"]
        self.assertTrue(url.startswith(self.server.base_url + "/v1/hooks/"), url)
        return urllib.parse.urlparse(url).path

    def hook(self, path, body=None, raw=None, content_type="application/json", headers=None):
        if raw is None and body is not None:
            raw = json.dumps(body).encode()
        return self.server.request("POST", path, body=raw, content_type=content_type,
                                   headers=headers)

    # -- checks --

    def assertTs(self, v, nullable=False):
        if nullable and v is None:
            return
        self.assertIsInstance(v, str, v)
        self.assertRegex(v, TS_RE)

    def assertCount(self, v):
        self.assertIsInstance(v, int)
        self.assertNotIsInstance(v, bool)
        self.assertGreaterEqual(v, 0)

    def checkRun(self, run, wf_id=None):
        self.assertEqual(set(run), RUN_FIELDS, run)
        self.assertRegex(run["id"], RUN_ID_RE)
        if wf_id is not None:
            self.assertEqual(run["workflow_id"], wf_id)
        self.assertIn(run["status"], RUN_STATUSES)
        self.assertEqual(set(run["trigger"]), {"type", "event", "data"}, run["trigger"])
        self.assertIn(run["trigger"]["type"], ("manual", "webhook", "schedule", "integration"))
        self.assertIsInstance(run["trigger"]["data"], dict)
        self.assertCount(run["credits_used"])
        self.assertTs(run["created_at"])
        self.assertTs(run["started_at"], True)
        self.assertTs(run["completed_at"], True)
        if run["error"] is not None:
            self.assertIsInstance(run["error"], str)
        self.assertIsInstance(run["steps"], list)
        self.assertGreaterEqual(len(run["steps"]), 1)
        for i, s in enumerate(run["steps"]):
            self.assertEqual(set(s), STEP_FIELDS, s)
            self.assertEqual(s["index"], i)
            self.assertIn(s["status"], STEP_STATUSES)
            self.assertCount(s["attempts"])
            self.assertLessEqual(s["attempts"], 3, s)
            self.assertCount(s["credits_used"])
            self.assertTs(s["started_at"], True)
            self.assertTs(s["completed_at"], True)
            if s["input"] is not None:
                self.assertIsInstance(s["input"], str)
            self.assertIsInstance(s["tool_calls"], list)
            self.assertIn(s["stop_reason"], STOP_REASONS, s)
            if s["status"] != "completed":
                self.assertIsNone(s["stop_reason"], s)

    def checkEnded(self, run):
        """The invariants of a finished run."""
        self.assertIn(run["status"], ENDED)
        self.assertTs(run["completed_at"])
        self.assertLessEqual(parse_ts(run["created_at"]), parse_ts(run["completed_at"]))
        # The run's credits are its steps'.
        self.assertEqual(run["credits_used"], sum(s["credits_used"] for s in run["steps"]), run)
        statuses = [s["status"] for s in run["steps"]]
        if run["status"] == "completed":
            self.assertIsNone(run["error"], run)
            self.assertTrue(set(statuses) <= {"completed", "skipped"}, statuses)
            self.assertTs(run["started_at"])
        elif run["status"] == "failed":
            self.assertIsInstance(run["error"], str)
            failed = [i for i, st in enumerate(statuses) if st == "failed"]
            self.assertEqual(len(failed), 1, statuses)
            n = failed[0]
            self.assertTrue(run["error"].startswith("steps[%d]: " % n), run["error"])
            self.assertTrue(set(statuses[:n]) <= {"completed", "skipped"}, statuses)
            self.assertEqual(set(statuses[n + 1:]) | {"cancelled"}, {"cancelled"}, statuses)
            self.assertTrue(run["steps"][n]["error"], run["steps"][n])
        for s in run["steps"]:
            if s["status"] == "completed":
                self.assertIsNotNone(s["output"], s)
                self.assertIsNone(s["error"], s)
                self.assertIsInstance(s["input"], str)
                self.assertGreaterEqual(s["attempts"], 1)
                self.assertTs(s["started_at"])
                self.assertTs(s["completed_at"])
                self.assertLessEqual(parse_ts(s["started_at"]), parse_ts(s["completed_at"]))
            elif s["status"] == "pending" or s["status"] == "running":
                self.fail("a step of an ended run is %s: %s" % (s["status"], run))
            else:
                self.assertIsNone(s["output"], s)


# =====================================================================================
# The built-in engine: actions, templates, conditions, history, dry runs, validation
# =====================================================================================

class WorkflowRunBuiltinTest(RunHelpers, ChatTestCase):

    def upload(self, key, text, filename="policy.txt", employee_ids=()):
        b = "wfr" + uuid.uuid4().hex
        parts = []
        for e in employee_ids:
            parts.append(("--%s\r\nContent-Disposition: form-data; name=\"employee_ids\"\r\n\r\n"
                          "%s\r\n" % (b, e)).encode())
        parts.append(("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                      "Content-Type: text/plain\r\n\r\n" % (b, filename)).encode()
                     + text.encode() + b"\r\n")
        parts.append(("--%s--\r\n" % b).encode())
        r = self.server.request("POST", "/v1/knowledge/documents", body=b"".join(parts), key=key,
                                content_type="multipart/form-data; boundary=" + b, timeout=60)
        doc = self.assertJson(r)

        def ready():
            d = self.assertJson(self.server.get("/v1/knowledge/documents/" + doc["id"], key=key))
            return d if d["status"] != "processing" else None
        done = self.poll(ready, "document %s processed" % doc["id"], 120)
        self.assertEqual(done["status"], "ready", done)
        return done

    def test_every_builtin_action(self):
        key, _ = self.fresh("test")
        e, other = self.emp(key, 0), self.emp(key, 1)
        token = "zq" + uniq("k").replace("-", "")[-10:]
        secret = "zs" + uniq("s").replace("-", "")[-10:]
        doc = self.upload(key, "Refund policy %s: customers who were charged twice get the "
                               "duplicate charge back within five business days." % token)
        # A document only 'other' may read: never a result of e's search.
        self.upload(key, "Refund policy %s restricted memo for another employee." % secret,
                    filename="memo.txt", employee_ids=[other])
        summary_text = ("The quarterly invoice run finished on Monday. Two customers were "
                        "charged twice because of a retry in the payment gateway. Both "
                        "duplicate charges were refunded on Tuesday. The gateway retry "
                        "setting was fixed. No other customer was affected.")
        extract_text = ("Customer: Alice Smith\nEmail: a@b.com\nDue date: 1 December 2026\n"
                        "Amount: 1,250.50\nWebsite: https://example.com/orders/7.\n"
                        "Phone: +1 (555) 123-4567\nUrgent: Yes\n")
        steps = [
            self.step(e, "respond", "Hello, {{trigger.customer}} asks about refunds"),
            self.step(e, "summarize", "{{trigger.report}}", options={"max_sentences": 2}),
            self.step(e, "classify", "{{trigger.ticket}}", options={"labels": BILLING_LABELS}),
            self.step(e, "extract", "{{trigger.form}}", options={"fields": {
                "customer": "string", "email": "email", "due_date": "date",
                "amount": "number", "website": "url", "phone": "phone", "urgent": "boolean",
                "note": "string", "refunded": "boolean"}}),
            self.step(e, "draft_email", "Your duplicate charge was refunded.",
                      options={"to": "{{steps[3].output.email}}", "tone": "friendly"}),
            self.step(e, "search_knowledge", "refund policy %s %s" % (token, secret),
                      options={"limit": 5}),
            self.step(e, "create_task", "Call {{steps[3].output.customer}} back",
                      options={"title": "Follow up {{trigger.customer}}", "priority": "high",
                               "due_in_hours": 24}),
        ]
        wf = self.make_wf(key, steps)
        self.assertEqual((wf["run_count"], wf["last_run_at"]), (0, None))
        inp = {"customer": "Alice", "report": summary_text,
               "ticket": "I was charged twice on my invoice", "form": extract_text}
        t0 = time.time()
        queued = self.start(key, wf["id"], inp)
        self.assertEqual([s["action"] for s in queued["steps"]],
                         [s["action"] for s in steps])
        self.assertEqual([s["employee_id"] for s in queued["steps"]], [e] * len(steps))
        run = self.wait_ended(key, wf["id"], queued["id"], "completed")
        t1 = time.time()
        self.assertEqual(run["created_at"], queued["created_at"])
        self.assertEqual(run["trigger"], queued["trigger"])
        st = run["steps"]
        for s in st:
            self.assertEqual((s["status"], s["attempts"], s["error"], s["credits_used"]),
                             ("completed", 1, None, 0), s)
        # Times: created <= started <= step 0 ... step N <= completed, all within the test.
        times = [parse_ts(run["created_at"]), parse_ts(run["started_at"])]
        for s in st:
            times += [parse_ts(s["started_at"]), parse_ts(s["completed_at"])]
        times.append(parse_ts(run["completed_at"]))
        self.assertEqual(times, sorted(times), "times out of order: %s" % run)
        self.assertGreaterEqual(times[0], t0 - 1)
        self.assertLessEqual(times[-1], t1 + 1)
        self.assertEqual(run["credits_used"], 0, "test keys are free")

        # respond: the employee's answer, to the rendered input
        self.assertEqual(st[0]["input"], "Hello, Alice asks about refunds")
        self.assertIsInstance(st[0]["output"], str)
        self.assertTrue(st[0]["output"].strip())
        # summarize: at most 2 of the input's sentences, shorter than it
        self.assertEqual(st[1]["input"], summary_text)
        out = st[1]["output"]
        self.assertIsInstance(out, str)
        self.assertTrue(out.strip())
        self.assertLess(len(out), len(summary_text))
        self.assertLessEqual(len(sentences(out)), 2, out)
        for sen in sentences(out):
            self.assertIn(sen, summary_text, "an extractive summary quotes the input")
        # classify
        self.assertEqual(set(st[2]["output"]), {"label", "score"}, st[2])
        self.assertEqual(st[2]["output"]["label"], "billing", st[2])
        score = st[2]["output"]["score"]
        self.assertIsInstance(score, (int, float))
        self.assertTrue(0 <= score <= 1, score)
        # extract: every field, typed, null where absent
        self.assertEqual(st[3]["output"], {
            "customer": "Alice Smith", "email": "a@b.com", "due_date": "2026-12-01",
            "amount": 1250.5, "website": "https://example.com/orders/7",
            "phone": "+1 (555) 123-4567", "urgent": True, "note": None, "refunded": None})
        # draft_email
        self.assertEqual(set(st[4]["output"]), {"subject", "body"}, st[4])
        self.assertIsInstance(st[4]["output"]["subject"], str)
        self.assertTrue(st[4]["output"]["subject"].strip())
        self.assertIn("Your duplicate charge was refunded", st[4]["output"]["body"])
        # search_knowledge: the query's hits, under e's access rule
        res = st[5]["output"]
        self.assertEqual(set(res), {"results"}, res)
        self.assertTrue(res["results"], "no result for a word of an uploaded document")
        for h in res["results"]:
            self.assertTrue(HIT_FIELDS <= set(h), h)
            self.assertTrue(0 <= h["score"] <= 1, h)
            self.assertNotIn(secret, h["content"], "a document e may not read was returned")
        self.assertEqual(res["results"][0]["document_id"], doc["id"])
        self.assertIn(token, res["results"][0]["content"])
        # create_task: the task record, and the task exists
        task = st[6]["output"]
        self.assertRegex(task["id"], TASK_ID_RE)
        self.assertEqual(st[6]["input"], "Call Alice Smith back")
        self.assertEqual((task["title"], task["priority"], task["employee_id"],
                          task["description"]),
                         ("Follow up Alice", "high", e, "Call Alice Smith back"))
        due = parse_ts(task["due_at"])
        made = parse_ts(st[6]["started_at"])
        self.assertAlmostEqual(due - made, 24 * 3600, delta=5)
        got = self.assertJson(self.server.get("/v1/tasks/" + task["id"], key=key))
        self.assertEqual((got["id"], got["title"], got["created_at"]),
                         (task["id"], task["title"], task["created_at"]))
        listed = self.assertJson(self.server.get("/v1/tasks?limit=100", key=key))["tasks"]
        self.assertIn(task["id"], [t["id"] for t in listed])
        # The workflow counts its run.
        w = self.get_wf(key, wf["id"])
        self.assertEqual(w["run_count"], 1)
        self.assertEqual(w["last_run_at"], run["created_at"])
        self.assertEqual(self.get_run(key, wf["id"], run["id"]), run)

    def test_templates(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [
            self.step(e, "extract", "{{trigger.form}}",
                      options={"fields": {"email": "email", "amount": "number"}}),
            self.step(e, "extract",
                      "To: {{steps[0].output.email}} amount={{steps[0].output.amount}} "
                      "user={{trigger.user.name}} second={{trigger.items[1]}} "
                      "obj={{trigger.meta}} flag={{trigger.flag}} missing=[{{trigger.nope}}] "
                      "deep=[{{steps[0].output.email.x}}] wf={{workflow.id}} run={{run.id}}",
                      options={"fields": {"to": "email"}}),
            self.step(e, "respond", "{{steps[0].output}}"),
        ])
        inp = {"form": "Email: z@y.io\nAmount: 42.5", "user": {"name": "Zoë ✓", "n": 2},
               "items": ["a", "b"], "flag": True, "meta": {"a": 1, "b": [True, None, "x"]}}
        run = self.run_and_wait(key, wf["id"], inp)
        st = run["steps"]
        self.assertEqual(st[0]["output"], {"email": "z@y.io", "amount": 42.5})
        self.assertEqual(st[1]["input"],
                         'To: z@y.io amount=42.5 user=Zoë ✓ second=b obj={"a":1,"b":[true,null,"x"]} '
                         'flag=true missing=[] deep=[] wf=%s run=%s' % (wf["id"], run["id"]))
        self.assertEqual(st[1]["output"], {"to": "z@y.io"})
        self.assertEqual(st[2]["input"], '{"email":"z@y.io","amount":42.5}')

    def test_conditions(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [
            self.step(e, "classify", "{{trigger.ticket}}", options={"labels": BILLING_LABELS}),
            self.step(e, "extract", "Email: yes@x.io", options={"fields": {"email": "email"}},
                      condition='{{ steps[0].output.label == "billing" }}'),
            self.step(e, "extract", "Email: no@x.io", options={"fields": {"email": "email"}},
                      condition='{{ trigger.vip == true && steps[0].output.score >= 0 }}'),
            self.step(e, "respond", "after [{{steps[2].output}}] [{{steps[1].output.email}}]"),
        ])
        run = self.run_and_wait(key, wf["id"], {"ticket": "I was charged twice on my invoice",
                                                "vip": False})
        st = run["steps"]
        self.assertEqual(st[0]["output"]["label"], "billing")
        self.assertEqual(st[1]["status"], "completed", st[1])
        self.assertEqual(st[1]["output"], {"email": "yes@x.io"})
        self.assertEqual(st[2]["status"], "skipped", st[2])
        self.assertIsNone(st[2]["output"])
        self.assertIsNone(st[2]["error"])
        self.assertEqual(st[2]["credits_used"], 0)
        self.assertEqual(st[3]["status"], "completed", "a step after a skipped one still runs")
        self.assertEqual(st[3]["input"], "after [] [yes@x.io]")
        # vip true: the step runs.
        run = self.run_and_wait(key, wf["id"], {"ticket": "I was charged twice on my invoice",
                                                "vip": True})
        self.assertEqual([s["status"] for s in run["steps"]], ["completed"] * 4)
        self.assertEqual(run["steps"][3]["input"],
                         'after [{"email":"no@x.io"}] [yes@x.io]')
        # Falsy values: "", 0, null, "false", missing.
        wf2 = self.make_wf(key, [self.step(e, "extract", "Email: f@x.io",
                                           options={"fields": {"email": "email"}},
                                           condition="{{ trigger.v }}")])
        for v, ran in (("", False), (0, False), (None, False), ("false", False), ("no", True),
                       (1, True), ([], True)):
            with self.subTest(v=v):
                r = self.run_and_wait(key, wf2["id"], {"v": v})
                self.assertEqual(r["steps"][0]["status"], "completed" if ran else "skipped")
        r = self.run_and_wait(key, wf2["id"], {})
        self.assertEqual(r["steps"][0]["status"], "skipped", "a missing value is falsy")

    def test_history_cursor_and_get(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "extract", "Email: {{trigger.email}}",
                                          options={"fields": {"email": "email"}})])
        self.assertEqual(self.runs_page(key, wf["id"]),
                         {"runs": [], "has_more": False, "next_cursor": None})
        ids = []
        for i in range(5):
            next_millisecond()
            ids.append(self.start(key, wf["id"], {"email": "u%d@x.io" % i})["id"])
        for rid in ids:
            self.wait_ended(key, wf["id"], rid, "completed")
        newest = ids[::-1]
        body = self.runs_page(key, wf["id"])
        self.assertEqual([r["id"] for r in body["runs"]], newest)
        self.assertFalse(body["has_more"])
        self.assertIsNone(body["next_cursor"])
        # Pages of 2: no overlap, nothing lost, has_more until the last page.
        seen, before, pages = [], None, 0
        while True:
            q = {"limit": 2}
            if before:
                q["before"] = before
            page = self.runs_page(key, wf["id"], **q)
            pages += 1
            self.assertLessEqual(len(page["runs"]), 2)
            seen += [r["id"] for r in page["runs"]]
            if not page["has_more"]:
                self.assertIsNone(page["next_cursor"])
                break
            self.assertIsInstance(page["next_cursor"], str)
            before = page["next_cursor"]
            self.assertLess(pages, 10)
        self.assertEqual(seen, newest)
        self.assertEqual(pages, 3)
        # Each listed run is the run as GET shows it.
        for r in body["runs"]:
            self.assertEqual(self.get_run(key, wf["id"], r["id"]), r)
            self.assertEqual(r["trigger"]["data"]["email"],
                             r["steps"][0]["output"]["email"])
        w = self.get_wf(key, wf["id"])
        self.assertEqual(w["run_count"], 5)
        self.assertEqual(w["last_run_at"], body["runs"][0]["created_at"])
        # Bad queries.
        for q, param in (("limit=0", "limit"), ("limit=101", "limit"), ("before=junk", "before"),
                         ("sort=asc", "sort")):
            with self.subTest(q=q):
                self.assertError(self.server.get("/v1/workflows/%s/runs?%s" % (wf["id"], q),
                                                 key=key), 400, "invalid_request", param)
        # Unknown run, a run of another workflow, an unknown workflow.
        wf2 = self.make_wf(key, [self.step(e)])
        for wid, rid in ((wf["id"], NO_RUN), (wf2["id"], ids[0])):
            with self.subTest(wf=wid, run=rid):
                self.assertError(self.server.get("/v1/workflows/%s/runs/%s" % (wid, rid),
                                                 key=key), 404, "run_not_found", "run_id")
                self.assertError(self.cancel(key, wid, rid), 404, "run_not_found", "run_id")
        self.assertEqual(self.runs_page(key, wf2["id"])["runs"], [])
        self.assertError(self.server.get("/v1/workflows/%s/runs" % NO_WF, key=key), 404,
                         "workflow_not_found", "id")
        self.assertError(self.server.get("/v1/workflows/%s/runs/%s" % (NO_WF, ids[0]), key=key),
                         404, "workflow_not_found", "id")

    def test_history_default_limit(self):
        key, _ = self.fresh("test")
        b = self.new_employee(key)["id"]
        self.set_emp_status(key, b, "offline")  # held: the runs stay queued, cheap to make
        wf = self.make_wf(key, [self.step(b)])
        ids = []
        for i in range(22):
            next_millisecond(2)  # distinct created_at: the order is then the creation order
            ids.append(self.checkQueued(self.start(key, wf["id"], {"i": i}))["id"])
        body = self.runs_page(key, wf["id"])
        self.assertEqual(len(body["runs"]), 20, "the default limit")
        self.assertTrue(body["has_more"])
        rest = self.runs_page(key, wf["id"], before=body["next_cursor"])
        self.assertEqual(len(rest["runs"]), 2)
        self.assertFalse(rest["has_more"])
        self.assertEqual([r["id"] for r in body["runs"] + rest["runs"]], ids[::-1])
        self.assertEqual(len(self.runs_page(key, wf["id"], limit=100)["runs"]), 22)
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], len(ids))
        # Cancel them all (no body needed), so that nothing is left queued.
        for r in self.all_runs(key, wf["id"]):
            c = self.server.request("POST", "/v1/workflows/%s/runs/%s/cancel"
                                    % (wf["id"], r["id"]), key=key)
            self.assertEqual(self.assertJson(c)["status"], "cancelled")

    def test_dry_run(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [
            self.step(e, "classify", "{{trigger.ticket}}", options={"labels": BILLING_LABELS}),
            self.step(e, "respond", "Label {{ steps[0].output.label }} for {{trigger.user.name}}",
                      condition='{{ steps[0].output.label == "billing" }}'),
            self.step(e, "create_task", "{{trigger.ticket}}",
                      condition="{{ trigger.vip == true }}"),
            self.step(e, "draft_email", "x {{workflow.id}}",
                      condition="{{ trigger.vip == true || steps[0].output.score > 0.5 }}"),
            self.step(e, "create_task", "always {{trigger.missing}}."),
        ])
        inp = {"ticket": "I was charged twice", "user": {"name": "Ann"}, "vip": False}
        r = self.assertJson(self.run_req(key, wf["id"], {"input": inp, "dry_run": True}))
        self.assertEqual(set(r), {"dry_run", "steps"}, r)
        self.assertIs(r["dry_run"], True)
        self.assertEqual(len(r["steps"]), 5)
        for i, s in enumerate(r["steps"]):
            self.assertEqual(set(s), {"index", "would_run", "input", "condition_value"}, s)
            self.assertEqual(s["index"], i)
        s0, s1, s2, s3, s4 = r["steps"]
        self.assertEqual((s0["would_run"], s0["input"], s0["condition_value"]),
                         (True, "I was charged twice", None))
        # Depends on an earlier output: unknown, its reference shown as a placeholder.
        self.assertIsNone(s1["would_run"], s1)
        self.assertIsNone(s1["condition_value"], s1)
        self.assertIn("steps[0].output.label", s1["input"])
        self.assertTrue(s1["input"].startswith("Label "), s1)
        self.assertTrue(s1["input"].endswith(" for Ann"), s1)
        self.assertEqual((s2["would_run"], s2["input"], s2["condition_value"]),
                         (False, "I was charged twice", False))
        self.assertIsNone(s3["would_run"], "false || unknown is unknown")
        self.assertEqual(s3["input"], "x " + wf["id"])
        self.assertEqual((s4["would_run"], s4["input"], s4["condition_value"]),
                         (True, "always .", None))
        # vip: true || unknown is true.
        inp["vip"] = True
        r = self.assertJson(self.run_req(key, wf["id"], {"input": inp, "dry_run": True}))
        self.assertEqual([(s["would_run"], s["condition_value"]) for s in r["steps"]],
                         [(True, None), (None, None), (True, True), (True, True), (True, None)])
        # No input: an empty trigger.
        r = self.assertJson(self.run_req(key, wf["id"], {"dry_run": True}))
        self.assertEqual(r["steps"][0]["input"], "")
        self.assertEqual(r["steps"][2]["would_run"], False)
        # Nothing stored, nothing done: no run, no count, no task made by create_task.
        self.witness()
        self.assertEqual(self.all_runs(key, wf["id"]), [])
        w = self.get_wf(key, wf["id"])
        self.assertEqual((w["run_count"], w["last_run_at"]), (0, None))
        self.assertEqual(self.assertJson(self.server.get("/v1/tasks", key=key))["tasks"], [])
        # dry_run false is a real run.
        run = self.start(key, wf["id"], {"ticket": "x"}, dry_run=False)
        self.wait_ended(key, wf["id"], run["id"])
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], 1)

    def test_run_validation(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e)])
        for body, param in (({"input": "text"}, "input"), ({"input": [1, 2]}, "input"),
                            ({"input": 5}, "input"), ({"input": True}, "input"),
                            ({"dry_run": "yes"}, "dry_run"), ({"dry_run": 1}, "dry_run"),
                            ({"input": {}, "extra": 1}, "extra")):
            with self.subTest(body=body):
                self.assertError(self.run_req(key, wf["id"], body), 400, "invalid_request",
                                 param)
        self.assertError(self.server.request("POST", "/v1/workflows/%s/run" % wf["id"],
                                             body=b"[1]", key=key), 400, "invalid_request",
                         {None, "body"} | {"input"})
        self.assertError(self.server.request("POST", "/v1/workflows/%s/run" % wf["id"],
                                             body=b"{oops", key=key), 400, "invalid_request",
                         {None, "body"})
        self.assertError(self.run_req(key, NO_WF, {}), 404, "workflow_not_found", "id")
        self.assertError(self.run_req(key, NO_WF, {"dry_run": True}), 404, "workflow_not_found",
                         "id")
        w = self.get_wf(key, wf["id"])
        self.assertEqual((w["run_count"], w["last_run_at"]), (0, None))
        self.assertEqual(self.all_runs(key, wf["id"]), [])
        # No body at all: a run with empty trigger data.
        r = self.assertJson(self.server.request("POST", "/v1/workflows/%s/run" % wf["id"],
                                                key=key))
        self.assertEqual(r["trigger"], {"type": "manual", "event": None, "data": {}})
        self.wait_ended(key, r["workflow_id"], r["id"], "completed")

    def test_isolation(self):
        key, org = self.fresh("live")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e)])
        run = self.run_and_wait(key, wf["id"], {"text": "hi"})
        other, _ = self.fresh("live")
        test_key = self.server.create_key(org, mode="test")
        for k in (other, test_key):
            with self.subTest(key=k[:9]):
                for r in (self.server.get("/v1/workflows/%s/runs" % wf["id"], key=k),
                          self.server.get("/v1/workflows/%s/runs/%s" % (wf["id"], run["id"]),
                                          key=k),
                          self.run_req(k, wf["id"], {"input": {"text": "x"}}),
                          self.run_req(k, wf["id"], {"dry_run": True}),
                          self.cancel(k, wf["id"], run["id"])):
                    self.assertError(r, 404, "workflow_not_found", "id")
                # A workflow of its own does not reach the run either.
                own = self.make_wf(k, [self.step(self.emp(k))])
                self.assertError(self.server.get("/v1/workflows/%s/runs/%s"
                                                 % (own["id"], run["id"]), key=k),
                                 404, "run_not_found", "run_id")
                self.assertError(self.cancel(k, own["id"], run["id"]), 404, "run_not_found",
                                 "run_id")
        self.assertEqual([r["id"] for r in self.all_runs(key, wf["id"])], [run["id"]])
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], 1)
        self.assertEqual(self.get_run(key, wf["id"], run["id"]), run)

    def test_scope(self):
        key, org = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e)])
        run = self.run_and_wait(key, wf["id"], {"text": "hi"})
        chat_only = self.server.create_key(org, mode="test", scopes="chat")
        for method, path, body in (
                ("POST", "/v1/workflows/%s/run" % wf["id"], {}),
                ("POST", "/v1/workflows/%s/run" % wf["id"], {"dry_run": True}),
                ("GET", "/v1/workflows/%s/runs" % wf["id"], None),
                ("GET", "/v1/workflows/%s/runs/%s" % (wf["id"], run["id"]), None),
                ("POST", "/v1/workflows/%s/runs/%s/cancel" % (wf["id"], run["id"]), {})):
            with self.subTest(method=method, path=path):
                r = self.server.request(method, path, key=chat_only, json_body=body)
                self.assertError(r, 403, "permission_denied")
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], 1)
        flows = self.server.create_key(org, mode="test", scopes="workflows")
        r2 = self.run_and_wait(flows, wf["id"], {"text": "scoped"})
        self.assertEqual([r["id"] for r in self.all_runs(flows, wf["id"])], [r2["id"], run["id"]])

    def test_offline_employee_holds_the_run(self):
        key, _ = self.fresh("test")
        a, b = self.emp(key, 0), self.new_employee(key)["id"]
        self.set_emp_status(key, b, "offline")
        wf = self.make_wf(key, [
            self.step(a, "extract", "Email: a@x.io", options={"fields": {"email": "email"}}),
            self.step(b, "extract", "Email: {{steps[0].output.email}}",
                      options={"fields": {"email": "email"}}),
        ])
        run = self.start(key, wf["id"], {})
        held = self.wait_run(key, wf["id"], run["id"],
                             lambda r: r["steps"][0]["status"] == "completed",
                             "step 0 completed")
        self.witness()
        held = self.get_run(key, wf["id"], run["id"])
        self.assertIn(held["status"], ("queued", "running"), held)
        self.assertEqual((held["steps"][1]["status"], held["steps"][1]["attempts"]),
                         ("pending", 0), "the offline employee's step must wait: %s" % held)
        self.assertIsNone(held["completed_at"])
        self.assertEqual(self.emp_status(key, b), "offline")
        self.set_emp_status(key, b, "idle", also=("active",))  # its step may start at once
        done = self.wait_ended(key, wf["id"], run["id"], "completed")
        self.assertEqual(done["steps"][1]["output"], {"email": "a@x.io"})
        self.assertEqual(done["steps"][1]["attempts"], 1)
        self.assertEqual(done["steps"][0], held["steps"][0])

    def test_cancel_held_run(self):
        key, _ = self.fresh("test")
        b = self.new_employee(key)["id"]
        self.set_emp_status(key, b, "offline")
        wf = self.make_wf(key, [self.step(b), self.step(b, "summarize")])
        run = self.start(key, wf["id"], {"text": "Nothing. To say."})
        self.checkQueued(run)
        self.witness()
        q = self.get_run(key, wf["id"], run["id"])
        self.assertEqual(q["status"], "queued", "a run whose first employee is offline waits")
        self.assertEqual([s["status"] for s in q["steps"]], ["pending", "pending"])
        next_millisecond()
        c = self.assertJson(self.cancel(key, wf["id"], run["id"]))
        self.checkRun(c, wf["id"])
        self.assertEqual(c["status"], "cancelled")
        self.assertEqual([s["status"] for s in c["steps"]], ["cancelled", "cancelled"])
        self.assertTs(c["completed_at"])
        self.assertGreater(parse_ts(c["completed_at"]), parse_ts(c["created_at"]))
        for s in c["steps"]:
            self.assertEqual((s["attempts"], s["output"], s["credits_used"]), (0, None, 0), s)
        self.assertEqual(self.get_run(key, wf["id"], run["id"]), c)
        self.assertError(self.cancel(key, wf["id"], run["id"]), 409, "run_not_cancellable",
                         "run_id")
        # Back online: the cancelled run stays as it is.
        self.set_emp_status(key, b, "idle")
        self.witness()
        self.assertEqual(self.get_run(key, wf["id"], run["id"]), c)
        # A completed run cannot be cancelled either.
        done = self.run_and_wait(key, wf["id"], {"text": "One. Two."})
        self.assertError(self.cancel(key, wf["id"], done["id"]), 409, "run_not_cancellable",
                         "run_id")
        self.assertEqual(self.get_run(key, wf["id"], done["id"]), done)
        # The cancel takes no parameters.
        self.assertError(self.server.post("/v1/workflows/%s/runs/%s/cancel"
                                          % (wf["id"], done["id"]), {"force": True}, key=key),
                         400, "invalid_request", "force")

    def test_live_key_is_charged_test_key_free(self):
        key, org = self.fresh("live", credits=1000)
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "respond", "{{trigger.text}}"),
                                self.step(e, "extract", "Email: q@x.io",
                                          options={"fields": {"email": "email"}})])
        b0 = self.balance(key)
        run = self.run_and_wait(key, wf["id"], {"text": "What is the refund policy?"})
        self.assertGreater(run["steps"][0]["credits_used"], 0, "respond calls the engine")
        self.assertGreater(run["credits_used"], 0)
        self.assertEqual(self.balance(key), b0 - run["credits_used"])
        # A webhook run of a live workflow is charged too.
        hwf = self.make_wf(key, [self.step(e, "respond", "{{trigger.text}}")],
                           trigger={"type": "webhook"})
        b0 = self.balance(key)
        h = self.assertJson(self.hook(self.hook_path(hwf), {"text": "Where is my parcel?"}))
        h = self.wait_ended(key, hwf["id"], h["id"], "completed")
        self.assertGreater(h["credits_used"], 0)
        self.assertEqual(self.balance(key), b0 - h["credits_used"])
        # The same organization's test key: free.
        tkey = self.server.create_key(org, mode="test")
        te = self.emp(tkey)
        twf = self.make_wf(tkey, [self.step(te, "respond", "{{trigger.text}}")])
        b1 = self.balance(key)
        trun = self.run_and_wait(tkey, twf["id"], {"text": "What is the refund policy?"})
        self.assertEqual(trun["credits_used"], 0)
        self.assertEqual(trun["steps"][0]["credits_used"], 0)
        self.assertEqual(self.balance(key), b1)

    def test_no_credits(self):
        key, org = self.fresh("live", credits=1000)
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e)], trigger={"type": "webhook"})
        self.set_credits(org, 0)
        # the CLI is another process: its change is seen within 1 s (the contract)
        self.poll(lambda: self.balance(key) == 0, "the new balance shown", timeout=1.0, step=0.02)
        self.assertError(self.run_req(key, wf["id"], {"input": {"text": "x"}}), 402,
                         "insufficient_credits")
        self.assertError(self.hook(self.hook_path(wf), {"text": "x"}), 402,
                         "insufficient_credits")
        # A dry run costs nothing and is still answered.
        self.assertJson(self.run_req(key, wf["id"], {"dry_run": True}))
        self.assertEqual(self.all_runs(key, wf["id"]), [])
        w = self.get_wf(key, wf["id"])
        self.assertEqual((w["run_count"], w["last_run_at"]), (0, None))
        # A test key of the same organization runs free.
        tkey = self.server.create_key(org, mode="test")
        twf = self.make_wf(tkey, [self.step(self.emp(tkey))])
        self.run_and_wait(tkey, twf["id"], {"text": "x"})

    def test_disabled_workflow(self):
        key, _ = self.fresh("test")
        wf = self.make_wf(key, [self.step(self.emp(key))], trigger={"type": "webhook"})
        path = self.hook_path(wf)
        p = self.assertJson(self.server.patch("/v1/workflows/" + wf["id"], {"enabled": False},
                                              key=key))
        self.assertFalse(p["enabled"])
        self.assertError(self.hook(path, {"text": "x"}), 409, "workflow_disabled")
        self.assertEqual(self.all_runs(key, wf["id"]), [])
        run = self.run_and_wait(key, wf["id"], {"text": "manual"})
        self.assertEqual(run["trigger"]["type"], "manual")
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], 1)
        self.assertJson(self.server.patch("/v1/workflows/" + wf["id"], {"enabled": True},
                                          key=key))
        r = self.assertJson(self.hook(path, {"text": "again"}))
        self.wait_ended(key, wf["id"], r["id"], "completed")

    def test_webhook(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "extract", "{{trigger.form}}",
                                          options={"fields": {"email": "email"}})],
                          trigger={"type": "webhook", "event": "order.created"})
        path = self.hook_path(wf)
        data = {"form": "Email: hook@x.io", "n": 1, "nested": {"a": [1, "b", None]},
                "text": "café ✓"}
        r = self.hook(path, data)
        run = self.assertJson(r)
        self.checkRun(run, wf["id"])
        self.assertEqual(run["trigger"], {"type": "webhook", "event": "order.created",
                                          "data": data})
        done = self.wait_ended(key, wf["id"], run["id"], "completed")
        self.assertEqual(done["steps"][0]["output"], {"email": "hook@x.io"})
        self.assertEqual(done["trigger"], run["trigger"])
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], 1)
        # An API key is not needed, and one of another organization changes nothing.
        other, _ = self.fresh("test")
        r = self.hook(path, {"form": "x"}, headers={"Authorization": "Bearer " + other})
        self.assertEqual(self.assertJson(r)["workflow_id"], wf["id"])
        # Unknown tokens: an unknown route.
        for p in ("/v1/hooks/" + "A" * 40, path + "x", path[:-1]):
            with self.subTest(path=p):
                self.assertError(self.hook(p, {"a": 1}), 404, "route_not_found")
        self.assertEqual(len(self.all_runs(key, wf["id"])), 2)
        # Only POST.
        r = self.server.request("GET", path)
        self.assertError(r, 405, "method_not_allowed")
        self.assertIn("POST", r.header("Allow", ""))
        # Rotation: the old URL stops, the new one works.
        rot = self.assertJson(self.server.post("/v1/workflows/%s/rotate_webhook" % wf["id"], {},
                                               key=key))
        new_path = self.hook_path(rot)
        self.assertNotEqual(new_path, path)
        self.assertError(self.hook(path, {"form": "x"}), 404, "route_not_found")
        r = self.assertJson(self.hook(new_path, {"form": "Email: new@x.io"}))
        done = self.wait_ended(key, wf["id"], r["id"], "completed")
        self.assertEqual(done["steps"][0]["output"], {"email": "new@x.io"})
        # A workflow no longer webhook-triggered: its URL is gone.
        self.assertJson(self.server.patch("/v1/workflows/" + wf["id"],
                                          {"trigger": {"type": "manual"}}, key=key))
        self.assertError(self.hook(new_path, {"form": "x"}), 404, "route_not_found")
        self.assertEqual(len(self.all_runs(key, wf["id"])), 3)

    def test_webhook_bad_bodies(self):
        """Contract §12: the body must be a JSON object; anything else is 400 and starts
        nothing (an empty body included: it is not a JSON object)."""
        key, _ = self.fresh("test")
        wf = self.make_wf(key, [self.step(self.emp(key))], trigger={"type": "webhook"})
        path = self.hook_path(wf)
        for raw in (b"not json", b"{\"a\":", b"[1,2]", b"\"text\"", b"42", b"null",
                    b"{} {}", b"", b"  "):
            with self.subTest(body=raw):
                before = len(self.all_runs(key, wf["id"]))
                r = self.hook(path, raw=raw)
                self.assertEqual(len(self.all_runs(key, wf["id"])), before,
                                 "a webhook body that is not a JSON object started a run")
                self.assertError(r, 400, "invalid_request", {None, "body"})

    def test_answer_is_the_queued_run(self):
        """POST .../run and POST /v1/hooks/{token} answer the run as queued (contract §12:
        "queues a run and returns it", "answers the queued run"): status queued, every step
        pending. Many fast runs, so that an answer read after the runner took the run shows."""
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "extract", "Email: q@x.io",
                                          options={"fields": {"email": "email"}})],
                          trigger={"type": "webhook"})
        path = self.hook_path(wf)
        # Deterministic: a held run (offline employee) is answered queued.
        off = self.new_employee(key)["id"]
        self.set_emp_status(key, off, "offline")
        held = self.make_wf(key, [self.step(off)])
        self.checkQueued(self.assertJson(self.run_req(key, held["id"], {})))
        # The race: the answer is read after the runner was woken (about 1 answer in 100
        # shows the run already running or completed); 1000 runs make it show.
        for i in range(500):
            for r in (self.run_req(key, wf["id"], {"input": {"i": i}}),
                      self.hook(path, {"i": i})):
                run = self.assertJson(r)
                self.assertEqual((run["status"], run["steps"][0]["status"]),
                                 ("queued", "pending"),
                                 "answer #%d (%s trigger) is not the queued run: %s"
                                 % (i, run["trigger"]["type"], json.dumps(run)))

    def test_run_keeps_its_definition(self):
        """A run follows the steps as they were when it was made: an edit meanwhile changes
        only later runs."""
        key, _ = self.fresh("test")
        a, b = self.emp(key, 0), self.new_employee(key)["id"]
        self.set_emp_status(key, b, "offline")
        wf = self.make_wf(key, [
            self.step(a, "extract", "Email: old@x.io", options={"fields": {"email": "email"}}),
            self.step(b, "extract", "old {{steps[0].output.email}}",
                      options={"fields": {"email": "email"}})])
        run = self.start(key, wf["id"], {})
        self.wait_run(key, wf["id"], run["id"], lambda r: r["steps"][0]["status"] == "completed",
                      "step 0 completed")
        self.assertJson(self.server.patch("/v1/workflows/" + wf["id"], {"steps": [
            self.step(a, "respond", "new {{trigger.x}}"),
            self.step(a, "respond", "new 2"),
            self.step(a, "respond", "new 3")]}, key=key))
        self.set_emp_status(key, b, "idle")
        done = self.wait_ended(key, wf["id"], run["id"], "completed")
        self.assertEqual([(s["action"], s["employee_id"]) for s in done["steps"]],
                         [("extract", a), ("extract", b)])
        self.assertEqual(done["steps"][1]["input"], "old old@x.io")
        self.assertEqual(done["steps"][1]["output"], {"email": "old@x.io"})
        later = self.run_and_wait(key, wf["id"], {"x": "y"})
        self.assertEqual([s["input"] for s in later["steps"]], ["new y", "new 2", "new 3"])

    def test_delete_workflow_with_runs(self):
        key, _ = self.fresh("test")
        b = self.new_employee(key)["id"]
        wf = self.make_wf(key, [self.step(b)])
        done = self.run_and_wait(key, wf["id"], {"text": "one"})
        self.set_emp_status(key, b, "offline")
        held = self.start(key, wf["id"], {"text": "two"})
        d = self.assertJson(self.server.request("DELETE", "/v1/workflows/" + wf["id"], key=key))
        self.assertEqual(d, {"id": wf["id"], "deleted": True})
        for rid in (done["id"], held["id"]):
            self.assertError(self.server.get("/v1/workflows/%s/runs/%s" % (wf["id"], rid),
                                             key=key), 404, "workflow_not_found", "id")
            self.assertError(self.cancel(key, wf["id"], rid), 404, "workflow_not_found", "id")
        self.assertError(self.server.get("/v1/workflows/%s/runs" % wf["id"], key=key), 404,
                         "workflow_not_found", "id")
        self.assertError(self.run_req(key, wf["id"], {}), 404, "workflow_not_found", "id")
        # The held run is gone with it: its employee back online runs nothing.
        self.set_emp_status(key, b, "idle")
        self.witness()
        self.assertEqual(self.emp_status(key, b), "idle")
        stats = self.assertJson(self.server.get("/v1/employees/%s/stats" % b, key=key))
        self.assertEqual(stats["workflow_steps"], 1, "only the first run's step ran")

    def test_credits_run_out_during_a_run(self):
        key, org = self.fresh("live", credits=1)
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "respond", "first {{trigger.text}}"),
                                self.step(e, "respond", "second"),
                                self.step(e, "respond", "third")])
        run = self.run_and_wait(key, wf["id"], {"text": "hi"}, status="failed")
        s0, s1, s2 = run["steps"]
        self.assertEqual((s0["status"], s0["credits_used"]), ("completed", 1))
        self.assertEqual((s1["status"], s1["output"], s1["credits_used"]), ("failed", None, 0))
        self.assertIn("insufficient_credits", s1["error"])
        self.assertTrue(run["error"].startswith("steps[1]: "), run["error"])
        # its event (contract §15): workflow_run.failed with the run as it ended, once
        evs = [e for e in self.assertJson(self.server.get("/v1/events?limit=100", key=key))
               ["events"] if e["data"]["object"].get("id") == run["id"]]
        self.assertEqual([e["type"] for e in evs], ["workflow_run.failed"])
        self.assertEqual(evs[0]["data"]["object"]["error"], run["error"])
        self.assertEqual(s2["status"], "cancelled")
        self.assertEqual(run["credits_used"], 1)
        self.assertEqual(self.balance(key), 0)
        self.assertError(self.run_req(key, wf["id"], {}), 402, "insufficient_credits")

    def test_employee_above_the_tier_fails_the_step(self):
        """docs/workflows.md (Runs, Failures): "A refused employee (deleted, or above the tier)
        fails the step at once" (contract §3: a starter organization may not employ a
        manager-tier employee). The organization is downgraded after the workflow was made."""
        key, org = self.fresh("live", credits=1000, tier="agency")
        mgr = self.emp(key, 0, tier="manager")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "extract", "Email: t@x.io",
                                          options={"fields": {"email": "email"}}),
                                self.step(mgr, "respond", "as a manager {{trigger.text}}"),
                                self.step(e, "respond", "after")])
        p = self.server.orgs_update(org, tier="starter")
        self.assertEqual(p.returncode, 0, p.stderr)
        # the CLI is another process: its change is seen within 1 s (the contract)
        self.poll(lambda: self.assertJson(self.server.get("/v1/account", key=key))["tier"]
                  == "starter", "the new tier shown", timeout=1.0, step=0.02)
        b0 = self.balance(key)
        run = self.start(key, wf["id"], {"text": "hello"})
        run = self.wait_ended(key, wf["id"], run["id"])
        s1 = run["steps"][1]
        self.assertEqual((run["status"], s1["status"], s1["attempts"], s1["output"],
                          s1["credits_used"]), ("failed", "failed", 1, None, 0),
                         "a manager-tier step ran for a starter organization: %s"
                         % json.dumps(run)[:2000])
        self.assertTrue(run["error"].startswith("steps[1]: "), run["error"])
        self.assertEqual(run["steps"][2]["status"], "cancelled")
        self.assertEqual(self.balance(key), b0 - run["credits_used"])

    def test_rendered_input_too_long(self):
        key, _ = self.fresh("test")
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "summarize", "{{trigger.text}}"),
                                self.step(e, "respond", "after")])
        big = "word. " * (300 * 1024 // 6)
        run = self.run_and_wait(key, wf["id"], {"text": big}, status="failed")
        s0 = run["steps"][0]
        self.assertEqual((s0["status"], s0["attempts"], s0["output"]), ("failed", 1, None))
        self.assertIn("262144", s0["error"])
        self.assertEqual(run["steps"][1]["status"], "cancelled")
        # Just under the limit is fine.
        ok = "w" * (256 * 1024 - 10)
        wf2 = self.make_wf(key, [self.step(e, "extract", "{{trigger.text}}",
                                           options={"fields": {"email": "email"}})])
        run = self.run_and_wait(key, wf2["id"], {"text": ok})
        self.assertEqual(run["steps"][0]["output"], {"email": None})
        self.assertEqual(len(run["steps"][0]["input"]), len(ok))

    def test_employee_stats_count_steps(self):
        key, _ = self.fresh("live")
        e = self.new_employee(key)["id"]
        wf = self.make_wf(key, [
            self.step(e, "respond", "{{trigger.text}}"),
            self.step(e, "extract", "Email: s@x.io", options={"fields": {"email": "email"}}),
            self.step(e, "respond", "never", condition="{{ trigger.more }}"),
            self.step(e, "draft_email", "Thanks")])
        run = self.run_and_wait(key, wf["id"], {"text": "hello"})
        self.assertEqual([s["status"] for s in run["steps"]],
                         ["completed", "completed", "skipped", "completed"])
        stats = self.assertJson(self.server.get("/v1/employees/%s/stats?period=24h" % e,
                                                key=key))
        self.assertEqual(stats["workflow_steps"], 3, "completed steps, not the skipped one")
        self.assertEqual(stats["credits_used"], run["credits_used"])
        self.assertEqual((stats["messages"], stats["tasks_completed"]), (0, 0))

    def snapshot_problem(self, run):
        """What is inconsistent in one answer about a run, or None. A run and its steps change
        together (one transaction per step), so any answer shows one state of both."""
        st = [x["status"] for x in run["steps"]]
        done = [x in ("completed", "skipped") for x in st]
        if run["status"] == "queued" and (set(st) != {"pending"} or run["started_at"]):
            return "run queued but steps %s" % st
        if run["status"] == "running" and all(done):
            return "run running but every step ended: %s" % st
        if run["status"] == "completed" and not all(done):
            return "run completed but steps %s" % st
        if run["credits_used"] != sum(x["credits_used"] for x in run["steps"]):
            return "run credits_used %d but its steps' sum to %d" % (
                run["credits_used"], sum(x["credits_used"] for x in run["steps"]))
        if st.count("running") > 1:
            return "two steps running: %s" % st
        n = sum(1 for _ in itertools.takewhile(lambda d: d, done))
        if any(x != "pending" for x in st[n + 1:]):
            return "steps out of order: %s" % st
        return None

    def test_run_snapshots_consistent(self):
        """GET .../runs/{run_id} while fast runs execute: every answer is one state of the
        run and its steps (the run row and its steps read together)."""
        key, _ = self.fresh("live", credits=1000000)
        e = self.emp(key)
        wf = self.make_wf(key, [self.step(e, "extract", "Email: s%d@x.io" % i,
                                          options={"fields": {"email": "email"}})
                                for i in range(10)])
        deadline, gets, runs = time.time() + 15, 0, 0
        while time.time() < deadline and runs < 150:
            run = self.start(key, wf["id"], {"n": runs})
            runs += 1
            while True:
                got = self.get_run(key, wf["id"], run["id"])
                gets += 1
                problem = self.snapshot_problem(got)
                self.assertIsNone(problem, "answer #%d about run #%d: %s\n%s"
                                  % (gets, runs, problem, json.dumps(got)))
                if got["status"] in ENDED:
                    self.assertEqual(got["status"], "completed")
                    break
                self.assertLess(time.time(), deadline + 30, "run %s does not end" % run["id"])
        self.assertGreater(gets, 100)

    def test_webhook_size_cap(self):
        key, _ = self.fresh("test")
        wf = self.make_wf(key, [self.step(self.emp(key), "respond", "size {{trigger.n}}")],
                          trigger={"type": "webhook"})
        path = self.hook_path(wf)
        # Exactly 1 MiB: accepted.
        head = b'{"n":1,"pad":"'
        body = head + b"x" * (MIB - len(head) - 2) + b'"}'
        self.assertEqual(len(body), MIB)
        run = self.assertJson(self.hook(path, raw=body))
        self.assertEqual(len(run["trigger"]["data"]["pad"]), MIB - len(head) - 2)
        done = self.wait_ended(key, wf["id"], run["id"], "completed")
        self.assertEqual(done["steps"][0]["input"], "size 1")
        # One byte more: 413, whether the body is sent or not.
        big = head + b"x" * (MIB - len(head) - 1) + b'"}'
        self.assertEqual(len(big), MIB + 1)
        s = self.server.connect()
        try:
            s.sendall(raw_head("POST", path, "%s:%d" % (self.server.host, self.server.port),
                               {"Content-Type": "application/json",
                                "Content-Length": str(len(big))}))

            def send():
                try:
                    s.sendall(big)
                except OSError:
                    pass  # the server may answer and close before reading it all
            t = threading.Thread(target=send, daemon=True)
            t.start()
            r = read_response(s, timeout=30)
        finally:
            s.close()
        self.assertError(r, 413, "request_too_large")
        self.assertEqual(len(self.all_runs(key, wf["id"])), 1)


# =====================================================================================
# The openai engine (mock): JSON actions, repair, retries, cancel in flight, active status
# =====================================================================================

class WorkflowRunEngineTest(RunHelpers, MockChatTestCase):
    """Live keys use the mock; WORKFORCE_LLM_RETRIES=0 so that the engine client itself does
    not retry (each step attempt is exactly one model request)."""

    mock_env = {"WORKFORCE_LLM_RETRIES": "0"}

    def requests_for(self, token):
        return [r for r in self.mock.requests()
                if r["path"].endswith("/chat/completions") and token in (r.get("last_user") or "")]

    def live(self, credits=100000):
        return self.fresh("live", credits=credits)

    def test_json_actions(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("json")
        steps = [
            self.step(e, "classify", "%s classify {{trigger.t}} %s" % (
                tok, say('{"label": "Billing", "score": 0.93, "why": "%s"}' % tok)),
                options={"labels": BILLING_LABELS}),
            self.step(e, "extract", "%s extract %s" % (tok, say(
                '```json\n{"email": "m@x.io", "amount": 12, "urgent": true, "extra": 1, '
                '"tok": "%s"}\n```' % tok)),
                options={"fields": {"email": "email", "amount": "number", "urgent": "boolean",
                                    "due": "date"}}),
            self.step(e, "draft_email", "%s draft %s" % (tok, say(
                'Here it is: {"subject": "Refund %s", "body": "Dear customer,\\nDone."}' % tok)),
                options={"to": "m@x.io", "tone": "formal"}),
            self.step(e, "summarize", "%s summarize %s" % (tok, say("Short summary %s." % tok)),
                      options={"max_sentences": 1}),
        ]
        wf = self.make_wf(key, steps)
        b0 = self.balance(key)
        run = self.run_and_wait(key, wf["id"], {"t": "charged twice"})
        st = run["steps"]
        self.assertEqual(st[0]["output"], {"label": "billing", "score": 0.93},
                         "the label named as given, the rest dropped")
        self.assertEqual(st[1]["output"], {"email": "m@x.io", "amount": 12, "urgent": True,
                                           "due": None})
        self.assertEqual(st[2]["output"], {"subject": "Refund " + tok,
                                           "body": "Dear customer,\nDone."})
        self.assertEqual(st[3]["output"], "Short summary %s." % tok)
        for i, action in enumerate(("classify", "extract", "draft_email", "summarize")):
            with self.subTest(action=action):
                reqs = [r for r in self.requests_for(tok)
                        if "%s %s" % (tok, action.split("_")[0]) in r["last_user"]]
                self.assertEqual(len(reqs), 1, "one request, no repair")
                body = reqs[0]["body"]
                if action == "summarize":
                    self.assertNotEqual((body.get("response_format") or {}).get("type"),
                                        "json_object", "a summary is text")
                else:
                    self.assertEqual(body.get("response_format"), {"type": "json_object"})
                self.assertIn(action, reqs[0]["last_user"], "the action is named to the model")
                self.assertEqual(st[i]["attempts"], 1)
                self.assertEqual(st[i]["credits_used"], price([reqs[0]["reply"]["usage"]]))
        self.assertIn("charged twice", self.requests_for(tok + " classify")[0]["last_user"])
        self.assertIn("max_sentences", self.requests_for(tok + " summarize")[0]["last_user"])
        self.assertEqual(self.balance(key), b0 - run["credits_used"])

    def test_repair_once(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("rep")
        wf = self.make_wf(key, [self.step(e, "classify", "%s %s" % (tok, say(
            "I think it is billing " + tok, '{"label": "bug", "score": 0.5}')),
            options={"labels": BILLING_LABELS})])
        b0 = self.balance(key)
        run = self.run_and_wait(key, wf["id"], {})
        s = run["steps"][0]
        self.assertEqual(s["output"], {"label": "bug", "score": 0.5})
        self.assertEqual(s["attempts"], 1, "a repair is not a new attempt")
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 2, "the answer and one repair")
        self.assertNotEqual(reqs[0]["last_user"], reqs[1]["last_user"])
        self.assertIn("could not be used", reqs[1]["last_user"], "the repair says why")
        self.assertIn(tok, reqs[1]["last_user"], "the repair repeats the request")
        self.assertGreaterEqual(s["credits_used"], 1)
        self.assertEqual(self.balance(key), b0 - run["credits_used"])

    def test_repair_charged_per_call(self):
        """Contract §3: live workflow steps consume max(1, ceil(total_tokens / 1000)) per
        language-model call; a step answered after one repair made two calls."""
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("rpc")
        wf = self.make_wf(key, [self.step(e, "extract", "%s %s" % (tok, say(
            "no JSON here " + tok, '{"email": "p@x.io"}')),
            options={"fields": {"email": "email"}})])
        b0 = self.balance(key)
        run = self.run_and_wait(key, wf["id"], {})
        s = run["steps"][0]
        self.assertEqual(s["output"], {"email": "p@x.io"})
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 2, "the answer and one repair")
        per_call = sum(price([r["reply"]["usage"]]) for r in reqs)
        self.assertEqual(s["credits_used"], per_call,
                         "two model calls of %s tokens: one price per call"
                         % [r["reply"]["usage"]["total_tokens"] for r in reqs])
        self.assertEqual(self.balance(key), b0 - per_call)

    def test_invalid_after_repair_fails(self):
        key, _ = self.live()
        e = self.emp(key)
        # Still invalid after the repair: the step and the run fail, later steps cancelled.
        tok2 = uniq("bad")
        wf2 = self.make_wf(key, [
            self.step(e, "draft_email", "%s %s" % (tok2, say('{"subject": 5}')),
                      options={}),
            self.step(e, "respond", "never " + tok2)])
        b1 = self.balance(key)
        run = self.run_and_wait(key, wf2["id"], {}, status="failed")
        s0, s1 = run["steps"]
        self.assertEqual(s0["status"], "failed")
        self.assertIsNone(s0["output"])
        self.assertEqual(s0["attempts"], 1, "an invalid answer is not retried")
        self.assertIn("draft_email", s0["error"])
        self.assertTrue(run["error"].startswith("steps[0]: "), run["error"])
        self.assertIn(s0["error"], run["error"])
        self.assertEqual((s1["status"], s1["attempts"], s1["output"]), ("cancelled", 0, None))
        self.assertEqual(len(self.requests_for(tok2)), 2, "the answer and one repair")
        self.assertEqual(len(self.requests_for("never " + tok2)), 0)
        self.assertEqual(self.balance(key), b1 - run["credits_used"])

    def test_engine_failure_retried_then_fails(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("f500")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[fail:500]]" % tok),
                                self.step(e, "respond", "later " + tok)])
        b0 = self.balance(key)
        run = self.run_and_wait(key, wf["id"], {}, status="failed", timeout=40)
        s0, s1 = run["steps"]
        self.assertEqual((s0["status"], s0["attempts"], s0["output"], s0["credits_used"]),
                         ("failed", 3, None, 0))
        self.assertTrue(s0["error"])
        self.assertTrue(run["error"].startswith("steps[0]"), run["error"])
        self.assertEqual((s1["status"], s1["attempts"]), ("cancelled", 0))
        reqs = self.requests_for(tok + " [[fail")
        self.assertEqual(len(reqs), 3, "three attempts in all")
        gaps = [reqs[i + 1]["time"] - reqs[i]["time"] for i in range(2)]
        self.assertGreaterEqual(gaps[0], 0.45, "backoff before the 2nd attempt: %s" % gaps)
        self.assertGreaterEqual(gaps[1], 1.9, "backoff before the 3rd attempt: %s" % gaps)
        self.assertEqual(len(self.requests_for("later " + tok)), 0)
        self.assertEqual(run["credits_used"], 0)
        self.assertEqual(self.balance(key), b0)

    def test_engine_failure_then_success(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("ff2")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[fail-first:2]]" % tok)])
        b0 = self.balance(key)
        run = self.run_and_wait(key, wf["id"], {}, timeout=40)
        s = run["steps"][0]
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 3)
        self.assertEqual(s["attempts"], 3)
        self.assertEqual(s["output"], reqs[-1]["reply"]["content"])
        self.assertEqual(s["credits_used"], price([reqs[-1]["reply"]["usage"]]))
        self.assertEqual(self.balance(key), b0 - run["credits_used"])

    def test_cancel_step_in_flight(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("cxl")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[pause:3000]]" % tok),
                                self.step(e, "respond", "next " + tok),
                                self.step(e, "respond", "last " + tok)])
        b0 = self.balance(key)
        run = self.start(key, wf["id"], {})
        self.poll(lambda: self.requests_for(tok + " [[pause"), "the step reached the engine", 10,
                  0.02)
        running = self.get_run(key, wf["id"], run["id"])
        self.assertEqual((running["status"], running["steps"][0]["status"]),
                         ("running", "running"), running)
        self.assertEqual(self.emp_status(key, e), "active")
        c = self.assertJson(self.cancel(key, wf["id"], run["id"]))
        self.checkRun(c, wf["id"])
        self.assertEqual(c["status"], "cancelled")
        self.assertEqual([s["status"] for s in c["steps"][1:]], ["cancelled", "cancelled"])
        self.assertError(self.cancel(key, wf["id"], run["id"]), 409, "run_not_cancellable",
                         "run_id")
        # The step in flight finishes, uncharged; nothing after it runs.
        end = self.wait_run(key, wf["id"], run["id"],
                            lambda r: r["steps"][0]["status"] not in ("pending", "running"),
                            "the end of the step in flight", 20)
        self.assertEqual(end["status"], "cancelled")
        self.assertIn(end["steps"][0]["status"], ("completed", "cancelled"), end)
        self.assertEqual(end["steps"][0]["credits_used"], 0)
        self.assertEqual(end["credits_used"], 0)
        self.assertEqual([s["status"] for s in end["steps"][1:]], ["cancelled", "cancelled"])
        self.witness()
        self.assertEqual(self.get_run(key, wf["id"], run["id"]), end)
        self.assertEqual(len(self.requests_for(tok + " [[pause")), 1)
        self.assertEqual(self.requests_for("next " + tok), [])
        self.assertEqual(self.balance(key), b0, "a cancelled run's step in flight is uncharged")
        self.poll(lambda: self.emp_status(key, e) == "idle", "the employee idle again", 10)

    def test_dry_run_calls_nothing(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("dry")
        wf = self.make_wf(key, [self.step(e, "classify", "%s {{trigger.t}}" % tok,
                                          options={"labels": ["a", "b"]}),
                                self.step(e, "respond", "%s {{steps[0].output.label}}" % tok)])
        b0 = self.balance(key)
        r = self.assertJson(self.run_req(key, wf["id"], {"input": {"t": "x"}, "dry_run": True}))
        self.assertEqual([s["input"] for s in r["steps"]][0], tok + " x")
        self.witness()
        self.assertEqual(self.requests_for(tok), [], "a dry run called the engine")
        self.assertEqual(self.balance(key), b0)
        self.assertEqual(self.all_runs(key, wf["id"]), [])

    def test_cancel_during_backoff(self):
        key, _ = self.live()
        e = self.emp(key)
        tok = uniq("bko")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[fail:503]]" % tok),
                                self.step(e, "respond", "next " + tok)])
        run = self.start(key, wf["id"], {})
        first = self.poll(lambda: self.requests_for(tok + " [[fail"), "the first attempt", 10,
                          0.01)
        self.assertEqual(len(first), 1)
        c = self.assertJson(self.cancel(key, wf["id"], run["id"]))
        self.assertEqual(c["status"], "cancelled")
        # Past the retry's ready time (0.5 s after the failure), a witness made later runs:
        # the retry, had it been queued still, would have been claimed before it.
        self.poll(lambda: time.time() > first[0]["time"] + 1.0, "the retry's time passed", 5,
                  0.01)
        self.witness()
        end = self.wait_run(key, wf["id"], run["id"],
                            lambda r: r["steps"][0]["status"] not in ("pending", "running"),
                            "the end of step 0", 10)
        self.assertEqual(len(self.requests_for(tok + " [[fail")), 1, "retried after a cancel")
        self.assertEqual(self.requests_for("next " + tok), [])
        self.assertEqual(end["status"], "cancelled")
        self.assertEqual([s["status"] for s in end["steps"]], ["cancelled", "cancelled"], end)
        self.assertEqual(end["steps"][0]["attempts"], 1)
        self.assertEqual(end["credits_used"], 0)

    def test_delete_workflow_during_step(self):
        key, _ = self.live()
        e = self.new_employee(key)["id"]
        tok = uniq("del")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[pause:1500]]" % tok),
                                self.step(e, "respond", "next " + tok)])
        b0 = self.balance(key)
        run = self.start(key, wf["id"], {})
        self.poll(lambda: self.requests_for(tok + " [[pause"), "the step reached the engine", 10,
                  0.02)
        self.assertJson(self.server.request("DELETE", "/v1/workflows/" + wf["id"], key=key))
        self.assertError(self.server.get("/v1/workflows/%s/runs/%s" % (wf["id"], run["id"]),
                                         key=key), 404, "workflow_not_found", "id")
        # The step in flight ends (its outcome has nowhere to go), uncharged.
        self.poll(lambda: self.emp_status(key, e) == "idle", "the employee idle again", 15)
        self.witness()
        self.assertEqual(self.requests_for("next " + tok), [])
        self.assertEqual(len(self.requests_for(tok + " [[pause")), 1)
        self.assertEqual(self.balance(key), b0)
        self.assertTrue(self.server.alive())

    def test_employee_active_during_step(self):
        key, _ = self.live()
        e = self.new_employee(key)["id"]
        tok = uniq("act")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[pause:2000]]" % tok)])
        self.assertEqual(self.emp_status(key, e), "idle")
        run = self.start(key, wf["id"], {})
        self.poll(lambda: self.emp_status(key, e) == "active", "the employee active", 10, 0.02)
        r = self.get_run(key, wf["id"], run["id"])
        self.assertEqual(r["steps"][0]["status"], "running", "active only during its step")
        self.wait_ended(key, wf["id"], run["id"], "completed")
        self.poll(lambda: self.emp_status(key, e) == "idle", "the employee idle again", 10)


# =====================================================================================
# kill -9 during a step
# =====================================================================================

class WorkflowRunRestartTest(RunHelpers, MockChatTestCase):

    mock_env = {"WORKFORCE_LLM_RETRIES": "0"}

    def requests_for(self, token):
        return [r for r in self.mock.requests()
                if r["path"].endswith("/chat/completions") and token in (r.get("last_user") or "")]

    def test_kill9_during_step(self):
        s = self.server
        key, _ = self.fresh("live")
        e = self.emp(key)
        tok = uniq("kill")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[pause:3000]]" % tok),
                                self.step(e, "respond", "then " + tok)])
        b0 = self.balance(key)
        run = self.start(key, wf["id"], {"n": 1})
        self.poll(lambda: self.requests_for(tok + " [[pause"), "the step reached the engine", 10,
                  0.02)
        s.kill()
        self.assertFalse(s.alive())
        s.start()
        done = self.wait_ended(key, wf["id"], run["id"], "completed", timeout=40)
        first = self.requests_for(tok + " [[pause")
        self.assertEqual(len(first), 2, "the step cut by the crash ran again, once")
        self.assertEqual(len(self.requests_for("then " + tok)), 1)
        s0 = done["steps"][0]
        self.assertEqual(s0["output"], first[-1]["reply"]["content"])
        self.assertEqual(s0["attempts"], 1, "the attempt cut by the crash is not counted")
        self.assertEqual(done["created_at"], run["created_at"])
        runs = self.all_runs(key, wf["id"])
        self.assertEqual([r["id"] for r in runs], [run["id"]], "no duplicate run")
        self.assertEqual(self.get_wf(key, wf["id"])["run_count"], 1)
        self.assertGreater(done["credits_used"], 0)
        self.assertEqual(self.balance(key), b0 - done["credits_used"])
        self.poll(lambda: self.emp_status(key, e) == "idle", "the employee idle again", 10)


    def test_sigterm_during_step(self):
        """A graceful stop during a step: the step either finishes in the drain or is left for
        the next start; either way the run completes once and nothing runs twice after it."""
        s = self.server
        key, _ = self.fresh("live")
        e = self.emp(key)
        tok = uniq("term")
        wf = self.make_wf(key, [self.step(e, "respond", "%s [[pause:1500]]" % tok),
                                self.step(e, "respond", "then " + tok)])
        b0 = self.balance(key)
        run = self.start(key, wf["id"], {})
        self.poll(lambda: self.requests_for(tok + " [[pause"), "the step reached the engine", 10,
                  0.02)
        self.assertEqual(s.stop(), 0)
        s.start()
        done = self.wait_ended(key, wf["id"], run["id"], "completed", timeout=40)
        n = len(self.requests_for(tok + " [[pause"))
        self.assertIn(n, (1, 2), "the step cut by the stop runs at most once more")
        self.assertEqual(len(self.requests_for("then " + tok)), 1)
        self.assertEqual(done["steps"][0]["attempts"], 1)
        self.assertEqual([r["id"] for r in self.all_runs(key, wf["id"])], [run["id"]])
        self.assertEqual(self.balance(key), b0 - done["credits_used"])


# =====================================================================================
# Schedules
# =====================================================================================

class WorkflowRunScheduleTest(RunHelpers, ChatTestCase):

    def set_next_run(self, wf_ids, at_ms):
        con = sqlite3.connect(self.server.db, timeout=30)
        try:
            with con:
                for wid in wf_ids:
                    n = con.execute("UPDATE workflows SET next_run_at = ? WHERE id = ?",
                                    (at_ms, wid)).rowcount
                    self.assertEqual(n, 1, wid)
        finally:
            con.close()

    def next_run_at(self, wf_id):
        con = sqlite3.connect("file:%s?mode=ro" % self.server.db, uri=True, timeout=30)
        try:
            return con.execute("SELECT next_run_at FROM workflows WHERE id = ?",
                               (wf_id,)).fetchone()[0]
        finally:
            con.close()

    @sqlite_only("the test sets next_run_at in the SQLite file")
    def test_scheduled_run_without_credits_fails_at_once(self):
        """A scheduled run passes the same balance gate as a run queued by hand (which is
        answered 402): a live organization without credits gets the occurrence's run
        recorded failed at once, as if its first step had failed for want of credits: none of
        its steps runs (not even one that costs nothing), and workflow_run.failed is
        emitted."""
        s = self.server
        key, _ = self.fresh("live", credits=0)
        e = self.emp(key)
        rule = {"frequency": "daily", "time": time.strftime("%H:%M",
                                                            time.gmtime(time.time() + 7200))}
        wf = self.make_wf(key, [self.step(e, "search_knowledge", "free {{trigger.scheduled_at}}"),
                                self.step(e, "respond", "paid")],
                          trigger={"type": "schedule", "recurring": rule})
        self.assertError(self.run_req(key, wf["id"], {}), 402, "insufficient_credits")
        self.assertEqual(s.stop(), 0)
        self.set_next_run([wf["id"]], (int(time.time()) - 3600) * 1000)
        s.start()
        self.witness()
        runs = self.all_runs(key, wf["id"])
        self.assertEqual(len(runs), 1, "one run for the occurrence: %s" % runs)
        run = self.wait_ended(key, wf["id"], runs[0]["id"], "failed")
        self.assertTrue(run["error"].startswith("steps[0]: insufficient_credits: "),
                        run["error"])
        self.assertEqual([(x["status"], x["attempts"], x["output"]) for x in run["steps"]],
                         [("failed", 0, None), ("cancelled", 0, None)],
                         "a step of a refused run ran")
        self.assertEqual(run["credits_used"], 0)
        evs = [v for v in self.assertJson(s.get("/v1/events?limit=100", key=key))["events"]
               if v["data"]["object"].get("id") == run["id"]]
        self.assertEqual([v["type"] for v in evs], ["workflow_run.failed"])
        self.assertEqual(self.balance(key), 0)

    @sqlite_only("the test reads next_run_at from the SQLite file")
    def test_due_occurrence_runs_once_at_start(self):
        s = self.server
        key, _ = self.fresh("test")
        e = self.emp(key)
        rule = {"frequency": "daily", "time": time.strftime("%H:%M",
                                                            time.gmtime(time.time() + 7200))}
        sched = {"type": "schedule", "recurring": rule}
        wf = self.make_wf(key, [self.step(e, "respond", "Daily {{trigger.scheduled_at}}")],
                          trigger=sched)
        off = self.make_wf(key, [self.step(e)], trigger=sched, enabled=False)
        future = self.next_run_at(wf["id"])
        self.assertGreater(future, time.time() * 1000)
        self.witness()
        self.assertEqual(self.all_runs(key, wf["id"]), [], "no occurrence has come yet")
        self.assertEqual(s.stop(), 0)
        # Three days of missed occurrences: one run.
        due = (int(time.time()) - 3 * 86400 - 3600) * 1000 + 123
        self.set_next_run([wf["id"], off["id"]], due)
        s.start()
        self.witness()
        runs = self.all_runs(key, wf["id"])
        self.assertEqual(len(runs), 1, "one run for the occurrence: %s" % runs)
        run = self.wait_ended(key, wf["id"], runs[0]["id"], "completed")
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(due / 1000)) + ".123Z"
        self.assertEqual(run["trigger"], {"type": "schedule", "event": None,
                                          "data": {"scheduled_at": iso}})
        self.assertEqual(run["steps"][0]["input"], "Daily " + iso)
        w = self.get_wf(key, wf["id"])
        self.assertEqual((w["run_count"], w["last_run_at"]), (1, run["created_at"]))
        # The next occurrence moved past now; the occurrence does not run again.
        self.assertGreater(self.next_run_at(wf["id"]), time.time() * 1000)
        self.witness()
        self.assertEqual([r["id"] for r in self.all_runs(key, wf["id"])], [run["id"]])
        # The disabled one got nothing.
        self.assertEqual(self.all_runs(key, off["id"]), [])
        self.assertEqual(self.get_wf(key, off["id"])["run_count"], 0)
