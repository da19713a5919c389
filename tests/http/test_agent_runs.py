# SPDX-License-Identifier: MIT
"""Task runs and workflow `respond` steps that call tools (contract §19), black-box, against
the scripted tool-calling model of tests/mock/openai_mock.py ([[tools:B64]] in the task's
description or the step's input).

- A run's turn offers the employee's auto tools, runs the model's calls and calls the model
  again with the results until it answers without calls; the calls are real (tasks.create
  makes the task, tasks.get reads it).
- The work shows on the run: GET /v1/tasks/{id}/runs items and GET
  /v1/workflows/{id}/runs/{run_id} steps carry `tool_calls` (as a message's) and
  `stop_reason`.
- A call that cannot run is an error result for the model, never a failed run.
- Limits: WORKFORCE_AGENT_MAX_STEPS model calls, the same call a third time.
- Credits: each model call of a live run is charged (a run's and a step's credits_used are
  the sum); a step whose engine fails after its tools ran is not tried again.
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


class AgentRunTest(MockChatTestCase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_AGENT_MAX_STEPS": "3",
                "WORKFORCE_LLM_RETRIES": "0"}

    @classmethod
    def setUpServer(cls):
        cls.org = "runs-" + uuid.uuid4().hex[:6]
        cls.live = cls.server.create_key(cls.org, tier="manager", credits=100000)
        cls.test = cls.server.create_key(cls.org, mode="test")

    # -- helpers --

    def employee_with(self, key, rules):
        emp = self.new_employee(key, name="Runner " + uuid.uuid4().hex[:4], role="Helper",
                                category="operations")["id"]
        r = self.server.patch("/v1/employees/" + emp, {"tools": rules}, key=key)
        self.assertEqual(r.status, 200, r)
        return emp

    def requests_for(self, token):
        """The model calls whose last user message holds 'token', in order."""
        return [r for r in self.mock.requests()
                if r["path"].endswith("/chat/completions") and token in (r["last_user"] or "")]

    def task(self, key, emp, description, title=None):
        body = {"employee_id": emp, "title": title or uniq("Run task"),
                "description": description}
        return self.assertJson(self.server.post("/v1/tasks", body, key=key))

    def wait_task(self, key, tid, timeout=30.0):
        """The task once its run has ended, and that run (the newest)."""
        deadline = time.time() + timeout
        while True:
            t = self.assertJson(self.server.get("/v1/tasks/" + tid, key=key))
            if t["status"] in ("completed", "failed"):
                runs = self.assertJson(self.server.get("/v1/tasks/%s/runs" % tid, key=key))
                return t, runs["runs"][0]
            if time.time() > deadline:
                self.fail("task %s did not end: %s\n%s" % (tid, t, self.server.log_tail(20)))
            time.sleep(0.05)

    def workflow(self, key, emp, name=None):
        body = {"name": name or uniq("Run flow"), "trigger": {"type": "manual"},
                "steps": [{"employee_id": emp, "action": "respond",
                           "input": "{{trigger.text}}"}]}
        return self.assertJson(self.server.post("/v1/workflows", body, key=key))["id"]

    def run_wf(self, key, wf, text, timeout=30.0):
        run = self.assertJson(self.server.post("/v1/workflows/%s/run" % wf,
                                               {"input": {"text": text}}, key=key))
        deadline = time.time() + timeout
        while True:
            run = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf, run["id"]),
                                                  key=key))
            if run["status"] in ENDED:
                return run
            if time.time() > deadline:
                self.fail("run %s did not end: %s\n%s" % (run["id"], run,
                                                          self.server.log_tail(20)))
            time.sleep(0.05)

    def checkCall(self, c, tool, status):
        self.assertTrue(c["id"].startswith("call_"), c)
        self.assertEqual((c["tool"], c["status"]), (tool, status), c)
        self.assertIsNotNone(c["started_at"], c)
        self.assertIsNotNone(c["completed_at"], c)
        self.assertIsNone(c["approval_id"], c)

    # -- tests --

    def test_runs_act_with_the_rights_of_who_started_them(self):
        # a key that may manage tasks and workflows, but not read knowledge
        narrow = self.server.create_key(self.org, mode="test",
                                        scopes="tasks,workflows,employees:read")
        emp = self.employee_with(self.test, [{"name": "knowledge.search", "policy": "auto"}])
        # a task this key creates: its run's call is refused, as the key's own would be
        tok = uniq("narrow-task")
        t = self.assertJson(self.server.post("/v1/tasks", {
            "employee_id": emp, "title": uniq("Narrow"),
            "description": tok + " " + script({"calls": [call("knowledge__search", query="x")]},
                                              {"say": "Tried."})}, key=narrow))
        t, run = self.wait_task(narrow, t["id"])
        c = run["tool_calls"][0]
        self.assertEqual(c["status"], "failed", c)
        self.assertTrue(c["error"].startswith("permission_denied"), c)
        # the same task made by a key without scopes: the call runs
        tok = uniq("wide-task")
        t, run = self.wait_task(self.test, self.task(self.test, emp, tok + " " + script(
            {"calls": [call("knowledge__search", query="x")]}, {"say": "Tried."}))["id"])
        self.assertEqual(run["tool_calls"][0]["status"], "completed", run)
        # a workflow run this key starts: its respond step's call is refused too
        wf = self.workflow(self.test, emp)
        run = self.assertJson(self.server.post(
            "/v1/workflows/%s/run" % wf,
            {"input": {"text": uniq("narrow-run") + " " + script(
                {"calls": [call("knowledge__search", query="x")]}, {"say": "Tried."})}},
            key=narrow))
        deadline = time.time() + 30
        while run["status"] not in ENDED and time.time() < deadline:
            time.sleep(0.05)
            run = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf, run["id"]),
                                                  key=narrow))
        self.assertEqual(run["status"], "completed", run)
        c = run["steps"][0]["tool_calls"][0]
        self.assertEqual(c["status"], "failed", c)
        self.assertTrue(c["error"].startswith("permission_denied"), c)
        # started by a key without scopes: it runs
        run = self.run_wf(self.test, wf, uniq("wide-run") + " " + script(
            {"calls": [call("knowledge__search", query="x")]}, {"say": "Tried."}))
        self.assertEqual(run["steps"][0]["tool_calls"][0]["status"], "completed", run)

    def test_task_run_calls_a_tool_then_answers(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.*", "policy": "auto"}])
        target = self.task(key, emp, "Nothing to do here.", title=uniq("Target"))
        self.wait_task(key, target["id"])
        tok = uniq("read-it")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__get", task_id=target["id"])]},
            {"say": "Read the target task."}))
        t, run = self.wait_task(key, t["id"])
        self.assertEqual((t["status"], t["result"]), ("completed", "Read the target task."))
        self.assertEqual((run["status"], run["stop_reason"]), ("completed", "completed"), run)
        self.assertEqual(len(run["tool_calls"]), 1, run)
        c = run["tool_calls"][0]
        self.checkCall(c, "tasks.get", "completed")
        self.assertEqual(c["arguments"], {"task_id": target["id"]})
        self.assertEqual((c["result"]["id"], c["result"]["title"]),
                         (target["id"], target["title"]))
        self.assertIsNone(c["error"])
        # the model was offered the rules' tools, then shown its call and the result
        reqs = self.requests_for(tok)
        self.assertEqual(len(reqs), 2, reqs)
        names = sorted(x["function"]["name"] for x in reqs[0]["body"]["tools"])
        self.assertEqual(names, ["tasks__create", "tasks__get"])
        msgs = reqs[1]["body"]["messages"]
        self.assertEqual(msgs[-2]["role"], "assistant")
        self.assertEqual(msgs[-2]["tool_calls"][0]["function"]["name"], "tasks__get")
        self.assertEqual(msgs[-1]["role"], "tool")
        self.assertEqual(json.loads(msgs[-1]["content"])["id"], target["id"])
        # an employee whose rules name no tool of the run is offered none
        plain = self.employee_with(key, [{"name": "slack.*", "policy": "auto"}])
        tok = uniq("no-tools")
        t, run = self.wait_task(key, self.task(key, plain, tok)["id"])
        self.assertEqual((run["tool_calls"], run["stop_reason"]), ([], "completed"))
        self.assertNotIn("tools", self.requests_for(tok)[0]["body"])

    def test_workflow_respond_step_creates_a_task(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.create", "policy": "auto"}])
        wf = self.workflow(key, emp)
        title = uniq("Follow up")
        run = self.run_wf(key, wf, uniq("Plan it") + " " + script(
            {"calls": [call("tasks__create", title=title, priority="high")]},
            {"say": "Created the follow-up."}))
        self.assertEqual(run["status"], "completed", run)
        step = run["steps"][0]
        self.assertEqual((step["output"], step["stop_reason"]),
                         ("Created the follow-up.", "completed"))
        self.assertEqual(len(step["tool_calls"]), 1, step)
        c = step["tool_calls"][0]
        self.checkCall(c, "tasks.create", "completed")
        self.assertEqual(c["arguments"], {"title": title, "priority": "high"})
        task = self.assertJson(self.server.get("/v1/tasks/" + c["result"]["id"], key=key))
        self.assertEqual((task["title"], task["employee_id"], task["priority"]),
                         (title, emp, "high"))
        # the run history shows the same work
        runs = self.assertJson(self.server.get("/v1/workflows/%s/runs" % wf, key=key))["runs"]
        self.assertEqual(runs[0]["steps"][0]["tool_calls"], step["tool_calls"])

    def test_failed_calls_go_back_to_the_model(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        tok = uniq("fails")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000"),
                       call("tasks__create", title="not offered"),
                       call("tasks__get", id="wrong member"),
                       {"name": "tasks__get", "arguments": "{not json"}]},
            {"say": "Some of that failed."}))
        t, run = self.wait_task(key, t["id"])
        self.assertEqual((t["status"], t["result"]), ("completed", "Some of that failed."))
        calls = run["tool_calls"]
        self.assertEqual([c["status"] for c in calls], ["failed"] * 4, calls)
        self.assertTrue(calls[0]["error"].startswith("task_not_found"), calls[0])
        self.assertTrue(calls[1]["error"].startswith("unknown_tool"), calls[1])
        self.assertTrue(calls[2]["error"].startswith("invalid_arguments"), calls[2])
        self.assertTrue(calls[3]["error"].startswith("invalid_arguments"), calls[3])
        self.assertEqual(calls[3]["arguments"], "{not json")
        for c in calls:
            self.assertEqual(c["result"], {"error": c["error"]}, c)
        tool_msgs = [x for x in self.requests_for(tok)[-1]["body"]["messages"]
                     if x["role"] == "tool"]
        self.assertEqual([json.loads(x["content"]) for x in tool_msgs],
                         [{"error": c["error"]} for c in calls])

    def test_limits(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        # WORKFORCE_AGENT_MAX_STEPS=3: three model calls, then the run stops
        tok = uniq("loop")
        t = self.task(key, emp, tok + " " + script(
            *[{"calls": [call("tasks__get", task_id="task_%024d" % i)]} for i in range(10)]))
        t, run = self.wait_task(key, t["id"])
        self.assertEqual((run["status"], run["stop_reason"]), ("completed", "max_steps"), run)
        self.assertIn("limit of 3 model calls", run["result"])
        self.assertEqual(len(run["tool_calls"]), 3)
        self.assertEqual(len(self.requests_for(tok)), 3)
        # the same call a third time stops a workflow step before it runs
        wf = self.workflow(key, emp)
        tok = uniq("again")
        run = self.run_wf(key, wf, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000001")]}))
        self.assertEqual(run["status"], "completed", run)
        step = run["steps"][0]
        self.assertEqual(step["stop_reason"], "repeated_call", step)
        self.assertIn("the same tool call was made three times", step["output"])
        self.assertEqual(len(step["tool_calls"]), 2)
        self.assertEqual(len(self.requests_for(tok)), 3)

    def test_live_runs_are_charged_per_model_call(self):
        key = self.live
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])

        def price(tok):
            usages = [r["reply"]["usage"] for r in self.requests_for(tok)]
            return len(usages), sum(credits_for({"input_tokens": u["prompt_tokens"],
                                                 "output_tokens": u["completion_tokens"]})
                                    for u in usages)
        before = self.balance(key)
        tok = uniq("charge-task")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"calls": [call("tasks__get", task_id="task_000000000000000000000001")]},
            {"say": "Charged three times."}))
        t, run = self.wait_task(key, t["id"])
        n, want = price(tok)
        self.assertEqual((run["status"], n), ("completed", 3), run)
        self.assertEqual((run["credits_used"], t["credits_used"]), (want, want))
        self.assertEqual(before - self.balance(key), want)
        # a respond step
        wf = self.workflow(key, emp)
        before = self.balance(key)
        tok = uniq("charge-step")
        run = self.run_wf(key, wf, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000002")]},
            {"say": "Charged twice."}))
        n, want = price(tok)
        self.assertEqual((run["status"], n), ("completed", 2), run)
        self.assertEqual((run["steps"][0]["credits_used"], run["credits_used"]), (want, want))
        self.assertEqual(before - self.balance(key), want)

    def test_engine_failure_after_tools(self):
        key = self.live
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        wf = self.workflow(key, emp)
        before = self.balance(key)
        tok = uniq("fail-late")
        run = self.run_wf(key, wf, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000003")]},
            {"fail": 500}))
        self.assertEqual(run["status"], "failed", run)
        step = run["steps"][0]
        # not tried again: its tool call had started
        self.assertEqual((step["status"], step["attempts"], step["stop_reason"]),
                         ("failed", 1, None), step)
        self.assertEqual(len(self.requests_for(tok)), 2)
        self.assertEqual(len(step["tool_calls"]), 1)
        self.assertEqual(step["tool_calls"][0]["status"], "failed")  # task_not_found
        # the model call that asked for the tool was charged, and stays counted
        first = self.requests_for(tok)[0]["reply"]["usage"]
        want = credits_for({"input_tokens": first["prompt_tokens"],
                            "output_tokens": first["completion_tokens"]})
        self.assertEqual((step["credits_used"], run["credits_used"]), (want, want))
        self.assertEqual(before - self.balance(key), want)
        # a task run whose engine fails after its tools: failed, the work kept
        tok = uniq("fail-task")
        t = self.task(key, emp, tok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000004")]},
            {"fail": 500}))
        t, run = self.wait_task(key, t["id"])
        self.assertEqual((t["status"], run["status"], run["stop_reason"]),
                         ("failed", "failed", None), run)
        self.assertEqual(len(run["tool_calls"]), 1)
        self.assertEqual(run["credits_used"], credits_for(
            {"input_tokens": self.requests_for(tok)[0]["reply"]["usage"]["prompt_tokens"],
             "output_tokens": self.requests_for(tok)[0]["reply"]["usage"]["completion_tokens"]}))

    def test_a_live_run_stops_when_the_credits_run_out(self):
        org = uniq("runs-poor")
        key = self.server.create_key(org, tier="manager", credits=2)
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        tok = uniq("poor")
        # the run holds 1 credit, its first model call takes the last one: no second call
        t = self.task(key, emp, tok + " " + script(
            *[{"calls": [call("tasks__get", task_id="task_%024d" % i)]} for i in range(10)]))
        t, run = self.wait_task(key, t["id"])
        self.assertEqual((run["status"], run["stop_reason"]),
                         ("completed", "insufficient_credits"), run)
        self.assertIn("no credits left", run["result"])
        self.assertEqual(len(self.requests_for(tok)), 1)
        self.assertEqual(len(run["tool_calls"]), 1)
        # the call of that step ran; what the run held comes back at its end
        self.assertEqual(run["tool_calls"][0]["status"], "failed")  # task_not_found
        self.assertEqual((run["credits_used"], self.balance(key)), (1, 1))
