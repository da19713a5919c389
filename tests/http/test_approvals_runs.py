# SPDX-License-Identifier: MIT
"""Approvals in task runs and workflow `respond` steps (contract §19), black-box, against the
scripted tool-calling model of tests/mock/openai_mock.py ([[tools:B64]] in the task's
description or the step's input).

- A run's turn is offered the employee's approve tools; a call to one is journaled as
  pending_approval with an approval naming the run (task_id and task_run_id, or
  workflow_run_id and step_index), the step's other calls run, and the run waits: run status
  waiting_approval with the task in_progress, or step status waiting_approval with the
  workflow run running. It holds nothing while it waits (the employee is idle).
- Approved, the call runs with the arguments as approved and the turn goes on to its end from
  where it stopped (the model is called once more, not from the start); rejected, the model
  is told {"error": "rejected", "reason": ...}.
- What the model calls cost before the pause stays counted on the run, its task or workflow
  run, and the balance; the rest is added when it ends.
- A run cancelled while it waits (a task PATCHed to failed) stays cancelled when its approval
  is then decided.
- A waiting run survives the server killed with SIGKILL: approved after the restart, it ends.
"""

import base64
import json
import time
import uuid

from chatlib import MockChatTestCase, credits_for, uniq

ENDED = ("completed", "failed", "cancelled")


def script(*steps):
    return "[[tools:%s]]" % base64.b64encode(json.dumps(list(steps)).encode()).decode()


def call(name, **args):
    return {"name": name, "arguments": args}


class RunApprovalsBase(MockChatTestCase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_LLM_RETRIES": "0"}

    @classmethod
    def setUpServer(cls):
        cls.org = "aprrun-" + uuid.uuid4().hex[:6]
        cls.live = cls.server.create_key(cls.org, tier="manager", credits=100000)  # org first
        cls.key = cls.server.create_key(cls.org, mode="test")
        cls.decider = cls.server.create_key(cls.org, mode="test", scopes="approvals")
        cls.live_decider = cls.server.create_key(cls.org, scopes="approvals")

    # -- helpers --

    def employee_with(self, key, rules):
        emp = self.new_employee(key, name="Waiter " + uuid.uuid4().hex[:4], role="Helper",
                                category="operations")["id"]
        r = self.server.patch("/v1/employees/" + emp, {"tools": rules}, key=key)
        self.assertEqual(r.status, 200, r)
        return emp

    def requests_for(self, token):
        """The model calls whose last user message holds 'token', in order."""
        return [r for r in self.mock.requests()
                if r["path"].endswith("/chat/completions") and token in (r["last_user"] or "")]

    def task(self, key, emp, description, title=None):
        body = {"employee_id": emp, "title": title or uniq("Waiting task"),
                "description": description}
        return self.assertJson(self.server.post("/v1/tasks", body, key=key))

    def last_run(self, key, tid):
        runs = self.assertJson(self.server.get("/v1/tasks/%s/runs" % tid, key=key))["runs"]
        return runs[0] if runs else None

    def wait_run(self, key, tid, statuses, timeout=30.0):
        """The task and its newest run once that run's status is one of 'statuses'."""
        deadline = time.time() + timeout
        while True:
            run = self.last_run(key, tid)
            if run and run["status"] in statuses:
                return self.assertJson(self.server.get("/v1/tasks/" + tid, key=key)), run
            if time.time() > deadline:
                self.fail("the run of task %s is not %s: %s\n%s"
                          % (tid, statuses, run, self.server.log_tail(30)))
            time.sleep(0.05)

    def workflow(self, key, emp):
        body = {"name": uniq("Waiting flow"), "trigger": {"type": "manual"},
                "steps": [{"employee_id": emp, "action": "respond",
                           "input": "{{trigger.text}}"}]}
        return self.assertJson(self.server.post("/v1/workflows", body, key=key))["id"]

    def start_wf(self, key, wf, text):
        return self.assertJson(self.server.post("/v1/workflows/%s/run" % wf,
                                                {"input": {"text": text}}, key=key))["id"]

    def wait_wf(self, key, wf, run_id, pred, timeout=30.0):
        deadline = time.time() + timeout
        while True:
            run = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf, run_id),
                                                  key=key))
            if pred(run):
                return run
            if time.time() > deadline:
                self.fail("run %s: %s\n%s" % (run_id, run, self.server.log_tail(30)))
            time.sleep(0.05)

    def step_waits(self, run):
        return run["steps"][0]["status"] == "waiting_approval"

    def approval(self, key, apr):
        return self.assertJson(self.server.get("/v1/approvals/" + apr, key=key))

    def decide(self, key, apr, verb, body=None):
        r = self.server.post("/v1/approvals/%s/%s" % (apr, verb), body or {}, key=key)
        self.assertEqual(r.status, 200, r)
        return r.json

    def tasks_titled(self, key, emp, title):
        ts = self.assertJson(self.server.get("/v1/tasks?employee_id=" + emp, key=key))["tasks"]
        return [t for t in ts if t["title"] == title]


class RunApprovalsTest(RunApprovalsBase):

    def test_task_run_waits_then_goes_on_when_approved(self):
        key = self.key
        emp = self.employee_with(key, [{"name": "tasks.create", "policy": "approve"},
                                       {"name": "tasks.get", "policy": "auto"}])
        title = uniq("Order desks")
        tok = uniq("approve-task")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__create", title=title),
                       call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "The desks are ordered."}))
        t, run = self.wait_run(key, t["id"], ("waiting_approval",) + ENDED)
        self.assertEqual((t["status"], run["status"]), ("in_progress", "waiting_approval"), run)
        self.assertIsNone(run["result"])
        self.assertIsNone(run["completed_at"])
        self.assertIsNone(run["stop_reason"])
        # the approve tool was offered; the call waits, the step's other call ran
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 1, reqs)
        names = sorted(x["function"]["name"] for x in reqs[0]["body"]["tools"])
        self.assertEqual(names, ["tasks__create", "tasks__get"])
        pending, other = run["tool_calls"]
        self.assertEqual((pending["tool"], pending["status"], pending["result"]),
                         ("tasks.create", "pending_approval", None), pending)
        self.assertTrue(pending["approval_id"].startswith("apr_"), pending)
        self.assertEqual((other["tool"], other["status"]), ("tasks.get", "failed"), other)
        self.assertTrue(other["error"].startswith("task_not_found"), other)
        self.assertEqual(self.tasks_titled(key, emp, title), [])
        # it holds nothing while it waits
        emp_now = self.assertJson(self.server.get("/v1/employees/" + emp, key=key))
        self.assertEqual(emp_now["status"], "idle", emp_now)
        # the approval names the run
        a = self.approval(key, pending["approval_id"])
        self.assertEqual((a["status"], a["tool"], a["employee_id"], a["task_id"],
                          a["task_run_id"], a["tool_call_id"], a["arguments"]),
                         ("pending", "tasks.create", emp, t["id"], run["id"], pending["id"],
                          {"title": title}))
        self.assertEqual((a["workflow_run_id"], a["step_index"], a["message_id"],
                          a["conversation_id"]), (None, None, None, None))
        # on behalf of the key that created the task (its rights are the run's)
        self.assertEqual(a["requested_by"]["type"], "key", a)
        self.assertRegex(a["requested_by"]["id"], r"^key_[A-Za-z0-9]{24}$")
        listed = self.assertJson(self.server.get("/v1/approvals?status=pending&employee_id="
                                                 + emp, key=key))["approvals"]
        self.assertEqual([x["id"] for x in listed], [a["id"]])
        # nothing takes it while its approval is pending: a task given after it runs and
        # ends meanwhile (the queue would have given the run to a worker first)
        probe = self.task(key, emp, uniq("probe") + " " + script({"say": "Probed."}))
        self.wait_run(key, probe["id"], ENDED)
        self.assertEqual(self.last_run(key, t["id"])["status"], "waiting_approval")
        self.assertEqual(len(self.requests_for(tok)), 1)
        # approved: the call runs as asked, the model is called once more, the run ends
        self.decide(self.decider, a["id"], "approve")
        t, run = self.wait_run(key, t["id"], ENDED)
        self.assertEqual((t["status"], t["result"]), ("completed", "The desks are ordered."), t)
        self.assertEqual((run["status"], run["stop_reason"], run["result"]),
                         ("completed", "completed", "The desks are ordered."), run)
        self.assertEqual(len(run["tool_calls"]), 2, run)
        done = run["tool_calls"][0]
        self.assertEqual((done["id"], done["status"], done["approval_id"]),
                         (pending["id"], "completed", a["id"]), done)
        self.assertEqual(done["result"]["title"], title)
        self.assertIsNotNone(done["completed_at"])
        self.assertEqual(run["tool_calls"][1], other)
        self.assertEqual(len(self.tasks_titled(key, emp, title)), 1)
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 2, reqs)
        msgs = reqs[1]["body"]["messages"]
        self.assertEqual([m["role"] for m in msgs[-4:]],
                         ["user", "assistant", "tool", "tool"], msgs)
        self.assertIn(tok, msgs[-4]["content"])
        self.assertEqual(len(msgs[-3]["tool_calls"]), 2)
        self.assertEqual(json.loads(msgs[-2]["content"])["title"], title)
        self.assertEqual(json.loads(msgs[-1]["content"]), {"error": other["error"]})

    def test_task_run_rejected_tells_the_model(self):
        key = self.key
        emp = self.employee_with(key, [{"name": "tasks.*", "policy": "approve"}])
        title = uniq("Never made")
        tok = uniq("reject-task")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__create", title=title)]},
            {"say": "Understood, not made."}))
        t, run = self.wait_run(key, t["id"], ("waiting_approval",) + ENDED)
        self.assertEqual(run["status"], "waiting_approval", run)
        apr = run["tool_calls"][0]["approval_id"]
        got = self.decide(self.decider, apr, "reject", {"reason": "Not this quarter."})
        self.assertEqual((got["status"], got["reason"]), ("rejected", "Not this quarter."))
        t, run = self.wait_run(key, t["id"], ENDED)
        self.assertEqual((t["status"], run["status"], run["result"]),
                         ("completed", "completed", "Understood, not made."), run)
        c = run["tool_calls"][0]
        self.assertEqual((c["status"], c["result"], c["approval_id"]),
                         ("rejected", {"error": "rejected", "reason": "Not this quarter."}, apr))
        last = self.requests_for(tok)[-1]["body"]["messages"][-1]
        self.assertEqual((last["role"], json.loads(last["content"])),
                         ("tool", {"error": "rejected", "reason": "Not this quarter."}))
        self.assertEqual(self.tasks_titled(key, emp, title), [])

    def test_workflow_step_waits_then_goes_on_with_edited_arguments(self):
        key = self.key
        emp = self.employee_with(key, [{"name": "tasks.create", "policy": "approve"},
                                       {"name": "tasks.get", "policy": "auto"}])
        wf = self.workflow(key, emp)
        title = uniq("Call the client")
        tok = uniq("approve-step")
        run_id = self.start_wf(key, wf, tok + " " + script(
            {"calls": [call("tasks__create", title=title),
                       call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "The follow-up is planned."}))
        run = self.wait_wf(key, wf, run_id,
                           lambda r: self.step_waits(r) or r["status"] in ENDED)
        step = run["steps"][0]
        self.assertEqual((run["status"], step["status"]), ("running", "waiting_approval"), run)
        self.assertEqual((step["output"], step["stop_reason"], step["completed_at"]),
                         (None, None, None), step)
        self.assertIn(tok, step["input"])
        c, other = step["tool_calls"]
        self.assertEqual((c["tool"], c["status"]), ("tasks.create", "pending_approval"), c)
        self.assertEqual((other["tool"], other["status"]), ("tasks.get", "failed"), other)
        a = self.approval(key, c["approval_id"])
        self.assertEqual((a["workflow_run_id"], a["step_index"], a["task_id"], a["task_run_id"],
                          a["employee_id"]), (run_id, 0, None, None, emp), a)
        self.assertEqual(self.assertJson(self.server.get("/v1/employees/" + emp,
                                                         key=key))["status"], "idle")
        # approved with edited arguments: the call runs with them
        edited = title + " (edited)"
        self.decide(self.decider, a["id"], "approve",
                    {"arguments": {"title": edited, "priority": "high"}})
        run = self.wait_wf(key, wf, run_id, lambda r: r["status"] in ENDED)
        step = run["steps"][0]
        self.assertEqual((run["status"], step["status"], step["output"], step["stop_reason"],
                          step["attempts"]),
                         ("completed", "completed", "The follow-up is planned.", "completed", 1),
                         run)
        # in the order the model made them (the approved call started last)
        self.assertEqual([x["tool"] for x in step["tool_calls"]], ["tasks.create", "tasks.get"])
        c = step["tool_calls"][0]
        self.assertEqual((c["status"], c["arguments"], c["result"]["title"]),
                         ("completed", {"title": edited, "priority": "high"}, edited), c)
        self.assertEqual(step["tool_calls"][1], other)
        made = self.tasks_titled(key, emp, edited)
        self.assertEqual([x["priority"] for x in made], ["high"])
        self.assertEqual(self.tasks_titled(key, emp, title), [])
        self.assertEqual(len(self.requests_for(tok)), 2)
        # a rejected call in a step: the model is told
        tok = uniq("reject-step")
        run_id = self.start_wf(key, wf, tok + " " + script(
            {"calls": [call("tasks__create", title=title)]}, {"say": "Fine."}))
        run = self.wait_wf(key, wf, run_id,
                           lambda r: self.step_waits(r) or r["status"] in ENDED)
        apr = run["steps"][0]["tool_calls"][0]["approval_id"]
        self.decide(self.decider, apr, "reject")
        run = self.wait_wf(key, wf, run_id, lambda r: r["status"] in ENDED)
        c = run["steps"][0]["tool_calls"][0]
        self.assertEqual((run["status"], c["status"], c["result"]["error"]),
                         ("completed", "rejected", "rejected"), run)
        self.assertEqual(self.tasks_titled(key, emp, title), [])

    def test_live_credits_carry_over_the_pause(self):
        key = self.live
        # tasks.get: a task made by the call would run, and cost, on its own
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "approve"}])

        def price(tok):
            usages = [r["reply"]["usage"] for r in self.requests_for(tok)]
            return sum(credits_for({"input_tokens": u["prompt_tokens"],
                                    "output_tokens": u["completion_tokens"]}) for u in usages)
        before = self.balance(key)
        tok = uniq("charge-wait")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "Charged twice."}))
        t, run = self.wait_run(key, t["id"], ("waiting_approval",) + ENDED)
        self.assertEqual(run["status"], "waiting_approval", run)
        first = price(tok)
        self.assertGreater(first, 0)
        # the first model call is charged and counted; the run's held credit came back
        self.assertEqual((run["credits_used"], t["credits_used"]), (first, first), run)
        self.assertEqual(before - self.balance(key), first)
        self.decide(self.live_decider, run["tool_calls"][0]["approval_id"], "approve")
        t, run = self.wait_run(key, t["id"], ENDED)
        total = price(tok)
        self.assertEqual(len(self.requests_for(tok)), 2)
        self.assertEqual((run["status"], run["credits_used"], t["credits_used"]),
                         ("completed", total, total), run)
        self.assertEqual(before - self.balance(key), total)
        # a respond step the same
        wf = self.workflow(key, emp)
        before = self.balance(key)
        tok = uniq("charge-step")
        run_id = self.start_wf(key, wf, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000001")]},
            {"say": "Done."}))
        run = self.wait_wf(key, wf, run_id,
                           lambda r: self.step_waits(r) or r["status"] in ENDED)
        first = price(tok)
        self.assertEqual((run["steps"][0]["credits_used"], run["credits_used"]),
                         (first, first), run)
        self.decide(self.live_decider, run["steps"][0]["tool_calls"][0]["approval_id"],
                    "approve")
        run = self.wait_wf(key, wf, run_id, lambda r: r["status"] in ENDED)
        total = price(tok)
        self.assertEqual((run["status"], run["steps"][0]["credits_used"], run["credits_used"]),
                         ("completed", total, total), run)
        self.assertEqual(before - self.balance(key), total)

    def test_cancelled_while_waiting(self):
        key = self.key
        emp = self.employee_with(key, [{"name": "tasks.create", "policy": "approve"}])
        title = uniq("Cancelled wait")
        tok = uniq("cancel-wait")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__create", title=title)]}, {"say": "Should not be said."}))
        t, run = self.wait_run(key, t["id"], ("waiting_approval",) + ENDED)
        self.assertEqual(run["status"], "waiting_approval", run)
        r = self.server.patch("/v1/tasks/" + t["id"], {"status": "failed"}, key=key)
        self.assertEqual(r.status, 200, r)
        run = self.last_run(key, t["id"])
        self.assertEqual(run["status"], "cancelled", run)
        self.decide(self.decider, run["tool_calls"][0]["approval_id"], "approve")
        # a workflow run cancelled while its step waits: the step ends cancelled
        wf = self.workflow(key, emp)
        wtok = uniq("cancel-step")
        run_id = self.start_wf(key, wf, wtok + " " + script(
            {"calls": [call("tasks__create", title=title)]}, {"say": "Should not be said."}))
        wrun = self.wait_wf(key, wf, run_id,
                            lambda x: self.step_waits(x) or x["status"] in ENDED)
        self.assertTrue(self.step_waits(wrun), wrun)
        r = self.server.post("/v1/workflows/%s/runs/%s/cancel" % (wf, run_id), {}, key=key)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["status"], r.json["steps"][0]["status"]),
                         ("cancelled", "cancelled"), r.json)
        self.decide(self.decider, wrun["steps"][0]["tool_calls"][0]["approval_id"], "approve")
        # whatever the workers do next, neither goes on: no second model call, nothing made.
        # A task created now runs after them in the queue, so its end bounds the wait.
        probe = self.task(key, emp, uniq("probe") + " " + script({"say": "Probed."}))
        self.wait_run(key, probe["id"], ENDED)
        self.assertEqual(len(self.requests_for(tok)), 1)
        self.assertEqual(len(self.requests_for(wtok)), 1)
        self.assertEqual(self.tasks_titled(key, emp, title), [])
        self.assertEqual(self.last_run(key, t["id"])["status"], "cancelled")
        wrun = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf, run_id),
                                               key=key))
        self.assertEqual((wrun["status"], wrun["steps"][0]["status"]),
                         ("cancelled", "cancelled"))


class RunApprovalAfterKillTest(RunApprovalsBase):
    """A waiting run is in the database only: the server killed, it is decided and ends."""

    def test_waiting_runs_survive_kill(self):
        key = self.key
        emp = self.employee_with(key, [{"name": "tasks.create", "policy": "approve"}])
        title = uniq("After the crash")
        ttok = uniq("kill-task")
        t = self.task(key, emp, ttok + " " + script(
            {"calls": [call("tasks__create", title=title)]}, {"say": "Made after all."}))
        wf = self.workflow(key, emp)
        wtok = uniq("kill-step")
        run_id = self.start_wf(key, wf, wtok + " " + script(
            {"calls": [call("tasks__create", title=title + " (step)")]},
            {"say": "Step done after all."}))
        t, run = self.wait_run(key, t["id"], ("waiting_approval",) + ENDED)
        self.assertEqual(run["status"], "waiting_approval", run)
        wrun = self.wait_wf(key, wf, run_id,
                            lambda x: self.step_waits(x) or x["status"] in ENDED)
        self.assertTrue(self.step_waits(wrun), wrun)
        self.server.kill()
        self.server.start()
        # still waiting after the restart
        self.assertEqual(self.last_run(key, t["id"])["status"], "waiting_approval")
        self.decide(self.decider, run["tool_calls"][0]["approval_id"], "approve")
        self.decide(self.decider, wrun["steps"][0]["tool_calls"][0]["approval_id"], "approve")
        t, run = self.wait_run(key, t["id"], ENDED)
        self.assertEqual((run["status"], run["result"], run["tool_calls"][0]["status"]),
                         ("completed", "Made after all.", "completed"), run)
        wrun = self.wait_wf(key, wf, run_id, lambda x: x["status"] in ENDED)
        self.assertEqual((wrun["status"], wrun["steps"][0]["output"]),
                         ("completed", "Step done after all."), wrun)
        self.assertEqual(len(self.tasks_titled(key, emp, title)), 1)
        self.assertEqual(len(self.tasks_titled(key, emp, title + " (step)")), 1)
        self.assertEqual(len(self.requests_for(ttok)), 2)
        self.assertEqual(len(self.requests_for(wtok)), 2)

    def test_a_run_cut_after_it_went_on_is_taken_up_again(self):
        """Approved, the run goes on; killed while its next model call is under way, it is
        taken up again from its journal after the restart: the approved call, which ended,
        is not made again, and the model is asked again."""
        key = self.key
        emp = self.employee_with(key, [{"name": "tasks.create", "policy": "approve"}])
        title = uniq("Made once")
        tok = uniq("cut-after")
        # [[pause]] holds back the answer that ends the turn (not the calls): the kill lands
        # while that model call is under way
        t = self.task(key, emp, tok + " [[pause:4000]] " + script(
            {"calls": [call("tasks__create", title=title)]}, {"say": "Finished after the cut."}))
        t, run = self.wait_run(key, t["id"], ("waiting_approval",) + ENDED)
        self.assertEqual(run["status"], "waiting_approval", run)
        self.decide(self.decider, run["tool_calls"][0]["approval_id"], "approve")
        self.assertTrue(self.wait_for(lambda: len(self.requests_for(tok)) == 2, timeout=20),
                        self.server.log_tail(30))
        run = self.last_run(key, t["id"])
        self.assertEqual((run["status"], run["tool_calls"][0]["status"]),
                         ("in_progress", "completed"), run)
        self.server.kill()
        self.server.start()
        t, run = self.wait_run(key, t["id"], ENDED)
        self.assertEqual((t["status"], run["status"], run["result"]),
                         ("completed", "completed", "Finished after the cut."), run)
        self.assertEqual(len(run["tool_calls"]), 1, run)
        self.assertEqual(run["tool_calls"][0]["status"], "completed")
        self.assertEqual(len(self.tasks_titled(key, emp, title)), 1)
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 3, reqs)
        self.assertEqual(json.loads(reqs[2]["body"]["messages"][-1]["content"])["title"], title)
