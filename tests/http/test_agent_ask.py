# SPDX-License-Identifier: MIT
"""employees.ask (contract §19): an employee asks a colleague in a turn, black-box, against the
scripted tool-calling model of tests/mock/openai_mock.py ([[tools:B64]]; the colleague's own
script rides in the message it is asked, so every level of a chain follows its own).

- The colleague answers as in chat (its persona, its model, the message as the user's, its own
  auto tools), with no conversation stored; the asking model reads {employee_id, name,
  answer} as the call's result.
- Each model call of the colleague's answer is charged to the organization as a chat reply's;
  with no credits the call is an error result (insufficient_credits) and nothing more is
  charged.
- An unknown colleague (or one of the other key mode), an offline one, one the tier may not
  chat with, and the asking employee itself are error results.
- employees.ask and workflows.run together go at most 3 levels deep: a call that would go
  deeper is an error result (max_depth) and does nothing; a workflow run started by
  workflows.run carries its level to its respond steps.
- Tools whose policy is approve are not offered to the colleague (its turn cannot pause).
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


def ask(employee_id, message):
    return call("employees__ask", employee_id=employee_id, message=message)


class AgentAskTest(MockChatTestCase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_AGENT_MAX_STEPS": "3",
                "WORKFORCE_LLM_RETRIES": "0"}

    @classmethod
    def setUpServer(cls):
        cls.org = "ask-" + uuid.uuid4().hex[:6]
        cls.live = cls.server.create_key(cls.org, tier="manager", credits=100000)
        cls.test = cls.server.create_key(cls.org, mode="test")

    # -- helpers --

    def employee_with(self, key, rules, **fields):
        fields.setdefault("name", "Mate " + uuid.uuid4().hex[:6])
        emp = self.new_employee(key, role="Helper", category="operations", **fields)["id"]
        r = self.server.patch("/v1/employees/" + emp, {"tools": rules}, key=key)
        self.assertEqual(r.status, 200, r)
        return emp

    def asker(self, key):
        return self.employee_with(key, [{"name": "employees.ask", "policy": "auto"}])

    def requests_for(self, token):
        """The model calls whose last user message holds 'token', in order."""
        return [r for r in self.mock.requests()
                if r["path"].endswith("/chat/completions") and token in (r["last_user"] or "")]

    def tool_results(self, req):
        """The results a model call was shown, as JSON."""
        return [json.loads(m["content"]) for m in req["body"]["messages"] if m["role"] == "tool"]

    def price(self, reqs):
        return sum(credits_for({"input_tokens": r["reply"]["usage"]["prompt_tokens"],
                                "output_tokens": r["reply"]["usage"]["completion_tokens"]})
                   for r in reqs)

    def wait_run(self, key, wf, run_id, timeout=30.0):
        deadline = time.time() + timeout
        while True:
            run = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf, run_id),
                                                  key=key))
            if run["status"] in ENDED:
                return run
            if time.time() > deadline:
                self.fail("run %s did not end: %s\n%s" % (run_id, run, self.server.log_tail(20)))
            time.sleep(0.05)

    # -- tests --

    def test_a_colleague_answers_as_in_chat(self):
        key = self.test
        persona = uniq("persona")
        name = "Planner " + uuid.uuid4().hex[:6]
        mate = self.employee_with(key, [{"name": "knowledge.search", "policy": "auto"}],
                                  name=name, instructions="You plan launches. " + persona,
                                  model="mock-colleague-1")
        emp = self.asker(key)
        ctok = uniq("when")
        cmsg = ctok + " When is the launch? " + script({"say": "The launch is on 3 March."})
        tok = uniq("Ask the planner")
        m = self.chat_ok(key, emp, tok + " " + script(
            {"calls": [ask(mate, cmsg)]}, {"say": "The planner says 3 March."}))
        self.assertEqual((m["content"], m["status"], m["stop_reason"]),
                         ("The planner says 3 March.", "completed", "completed"))
        self.assertEqual(len(m["tool_calls"]), 1, m)
        c = m["tool_calls"][0]
        self.assertEqual((c["tool"], c["status"], c["error"]), ("employees.ask", "completed", None))
        self.assertEqual(c["arguments"], {"employee_id": mate, "message": cmsg})
        self.assertEqual(c["result"], {"employee_id": mate, "name": name,
                                       "answer": "The launch is on 3 March."})
        # the colleague was asked as in chat: its persona and model, the message as the user's,
        # its own tools
        creqs = self.requests_for(ctok)
        self.assertEqual(len(creqs), 1, creqs)
        body = creqs[0]["body"]
        self.assertEqual(body["model"], "mock-colleague-1")
        self.assertIn(persona, body["messages"][0]["content"])
        self.assertIn(name, body["messages"][0]["content"])
        self.assertEqual(body["messages"][-1], {"role": "user", "content": cmsg})
        self.assertEqual([t["function"]["name"] for t in body["tools"]], ["knowledge__search"])
        # the asking model was offered employees.ask and read the answer as the call's result
        outer = self.requests_for(tok)
        self.assertEqual(len(outer), 2, outer)
        self.assertEqual([t["function"]["name"] for t in outer[0]["body"]["tools"]],
                         ["employees__ask"])
        self.assertEqual(self.tool_results(outer[1]), [c["result"]])
        # no conversation with the colleague was stored
        self.assertEqual(self.conversations(key, employee_id=mate)["conversations"], [])

    def test_the_colleagues_model_calls_are_charged(self):
        key = self.live
        mate = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        emp = self.asker(key)
        ctok = uniq("look")
        cmsg = ctok + " " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "No such task."})
        tok = uniq("Charge the colleague")
        before = self.balance(key)
        m = self.chat_ok(key, emp, tok + " " + script({"calls": [ask(mate, cmsg)]},
                                                      {"say": "Asked."}))
        self.assertEqual(m["tool_calls"][0]["status"], "completed", m)
        self.assertEqual(m["tool_calls"][0]["result"]["answer"], "No such task.")
        outer, inner = self.requests_for(tok), self.requests_for(ctok)
        self.assertEqual((len(outer), len(inner)), (2, 2))
        # the reply's credits_used are its own model calls; the colleague's are charged too
        self.assertEqual(m["credits_used"], self.price(outer))
        self.assertEqual(before - self.balance(key), self.price(outer) + self.price(inner))

    def test_no_credits(self):
        mate_name = "Broke " + uuid.uuid4().hex[:6]
        # 1 credit: the reply holds it from its start: the colleague is not asked
        org = "ask-poor-" + uuid.uuid4().hex[:6]
        key = self.server.create_key(org, tier="manager", credits=1)
        mate = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}], name=mate_name)
        emp = self.asker(key)
        ctok = uniq("never")
        m = self.chat_ok(key, emp, uniq("Poor") + " " + script(
            {"calls": [ask(mate, ctok + " hello")]}, {"say": "Nothing."}))
        c = m["tool_calls"][0]
        self.assertEqual(c["status"], "failed", c)
        self.assertTrue(c["error"].startswith("insufficient_credits"), c)
        self.assertEqual(m["stop_reason"], "insufficient_credits", m)
        self.assertEqual(self.requests_for(ctok), [])  # no model call: nothing to charge
        # 4 credits: the colleague's first model call (2,500 tokens: 3 credits) takes the last 2
        # and its answer stops there: an error result, and nothing is charged beyond 0
        self.set_credits(org, 4)
        ctok = uniq("spend")
        cmsg = ctok + " [[bigusage]] " + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "never said"})
        m = self.chat_ok(key, emp, uniq("Spend") + " " + script(
            {"calls": [ask(mate, cmsg)]}, {"say": "Out of credits."}))
        c = m["tool_calls"][0]
        self.assertEqual(c["status"], "failed", c)
        self.assertTrue(c["error"].startswith("insufficient_credits"), c)
        self.assertEqual(len(self.requests_for(ctok)), 1)
        self.assertEqual(self.balance(key), 0)

    def test_colleagues_that_cannot_answer(self):
        key = self.test
        emp = self.asker(key)
        offline = self.employee_with(key, [])
        r = self.server.patch("/v1/employees/" + offline, {"status": "offline"}, key=key)
        self.assertEqual(r.status, 200, r)
        other_mode = self.employee_with(self.live, [])
        tok, htok = uniq("Ask nobody"), uniq("hello")
        m = self.chat_ok(key, emp, tok + " " + script(
            {"calls": [ask("emp_000000000000000000000000", htok),
                       ask(other_mode, htok),
                       ask(offline, htok),
                       ask(emp, htok)]},
            {"say": "Nobody answered."}))
        self.assertEqual(m["content"], "Nobody answered.")
        calls = m["tool_calls"]
        self.assertEqual([c["status"] for c in calls], ["failed"] * 4, calls)
        self.assertTrue(calls[0]["error"].startswith("employee_not_found"), calls[0])
        self.assertTrue(calls[1]["error"].startswith("employee_not_found"), calls[1])
        self.assertTrue(calls[2]["error"].startswith("employee_offline"), calls[2])
        self.assertTrue(calls[3]["error"].startswith("invalid_arguments"), calls[3])
        self.assertEqual(self.tool_results(self.requests_for(tok)[-1]),
                         [{"error": c["error"]} for c in calls])
        self.assertEqual(self.requests_for(htok), [])
        # a starter organization may not chat with a manager-tier employee: nor ask one
        key = self.server.create_key("ask-starter-" + uuid.uuid4().hex[:6], mode="test")
        emp = self.asker(key)
        manager = self.employee(key, tier="manager")
        htok = uniq("hello boss")
        m = self.chat_ok(key, emp, uniq("Ask up") + " " + script(
            {"calls": [ask(manager, htok)]}, {"say": "Not allowed."}))
        self.assertTrue(m["tool_calls"][0]["error"].startswith("permission_denied"), m)
        self.assertEqual(self.requests_for(htok), [])

    def test_at_most_three_levels(self):
        key = self.test
        a, b, c, d = (self.asker(key) for _ in range(4))
        e = self.employee_with(key, [])
        flow = self.assertJson(self.server.post("/v1/workflows", {
            "name": uniq("Deep flow"), "trigger": {"type": "manual"},
            "steps": [{"employee_id": e, "action": "respond", "input": "{{trigger.text}}"}]},
            key=key))["id"]
        r = self.server.patch("/v1/employees/" + d, {"tools": [
            {"name": "employees.ask", "policy": "auto"},
            {"name": "workflows.run", "policy": "auto"}]}, key=key)
        self.assertEqual(r.status, 200, r)
        # a (the chat, level 0) asks b (1), who asks c (2), who asks d (3): d may not go on
        etok, dtok, ctok, btok = uniq("e"), uniq("d"), uniq("c"), uniq("b")
        dmsg = dtok + " " + script(
            {"calls": [ask(e, etok + " too deep"),
                       call("workflows__run", workflow_id=flow, input={"text": etok})]},
            {"say": "d stopped at the limit."})
        cmsg = ctok + " " + script({"calls": [ask(d, dmsg)]}, {"say": "c heard from d."})
        bmsg = btok + " " + script({"calls": [ask(c, cmsg)]}, {"say": "b heard from c."})
        m = self.chat_ok(key, a, uniq("Chain") + " " + script(
            {"calls": [ask(b, bmsg)]}, {"say": "a heard from b."}))
        self.assertEqual(m["content"], "a heard from b.")
        self.assertEqual(m["tool_calls"][0]["result"]["answer"], "b heard from c.")
        self.assertEqual(self.tool_results(self.requests_for(btok)[-1])[0]["answer"],
                         "c heard from d.")
        self.assertEqual(self.tool_results(self.requests_for(ctok)[-1])[0]["answer"],
                         "d stopped at the limit.")
        # d's calls came back as max_depth errors and did nothing
        dreqs = self.requests_for(dtok)
        self.assertEqual(len(dreqs), 2, dreqs)
        errors = [x.get("error", x) for x in self.tool_results(dreqs[1])]
        self.assertEqual(len(errors), 2, errors)
        for err in errors:
            self.assertTrue(str(err).startswith("max_depth: "), err)
            self.assertIn("at most 3 levels", err)
        self.assertEqual(self.requests_for(etok), [])
        runs = self.assertJson(self.server.get("/v1/workflows/%s/runs" % flow, key=key))
        self.assertEqual(runs["runs"], [])

    def test_a_workflow_run_carries_its_level(self):
        key = self.test
        a, r_emp, b, c = (self.asker(key) for _ in range(4))
        d = self.employee_with(key, [])
        r = self.server.patch("/v1/employees/" + a, {"tools": [
            {"name": "workflows.run", "policy": "auto"}]}, key=key)
        self.assertEqual(r.status, 200, r)
        flow = self.assertJson(self.server.post("/v1/workflows", {
            "name": uniq("Level flow"), "trigger": {"type": "manual"},
            "steps": [{"employee_id": r_emp, "action": "respond", "input": "{{trigger.text}}"}]},
            key=key))["id"]
        # the chat (0) starts the run, whose step (1) asks b (2), who asks c (3): c may not go on
        dtok, ctok, btok, rtok = uniq("d"), uniq("c"), uniq("b"), uniq("r")
        cmsg = ctok + " " + script({"calls": [ask(d, dtok + " too deep")]},
                                   {"say": "c stopped at the limit."})
        bmsg = btok + " " + script({"calls": [ask(c, cmsg)]}, {"say": "b heard from c."})
        rmsg = rtok + " " + script({"calls": [ask(b, bmsg)]}, {"say": "The step heard from b."})
        m = self.chat_ok(key, a, uniq("Start it") + " " + script(
            {"calls": [call("workflows__run", workflow_id=flow, input={"text": rmsg})]},
            {"say": "Started."}))
        c0 = m["tool_calls"][0]
        self.assertEqual(c0["status"], "completed", c0)
        run = self.wait_run(key, flow, c0["result"]["id"])
        self.assertEqual(run["status"], "completed", run)
        step = run["steps"][0]
        self.assertEqual(step["output"], "The step heard from b.")
        self.assertEqual(step["tool_calls"][0]["result"]["answer"], "b heard from c.")
        creqs = self.requests_for(ctok)
        self.assertEqual(len(creqs), 2, creqs)
        result = self.tool_results(creqs[1])[0]
        self.assertTrue(result.get("error", "").startswith("max_depth: "), result)
        self.assertEqual(self.requests_for(dtok), [])
        # the same step started by the API is at level 0: its chain goes one level further
        dtok2 = uniq("d2")
        cmsg = ctok + " " + script({"calls": [ask(d, dtok2 + " deep enough " + script(
            {"say": "d answered."}))]}, {"say": "c heard from d."})
        bmsg = btok + " " + script({"calls": [ask(c, cmsg)]}, {"say": "b heard from c."})
        rmsg = rtok + " " + script({"calls": [ask(b, bmsg)]}, {"say": "The step heard from b."})
        queued = self.assertJson(self.server.post("/v1/workflows/%s/run" % flow,
                                                  {"input": {"text": rmsg}}, key=key))
        run = self.wait_run(key, flow, queued["id"])
        self.assertEqual(run["status"], "completed", run)
        self.assertEqual(len(self.requests_for(dtok2)), 1)

    def test_approve_tools_are_not_offered_to_the_colleague(self):
        key = self.test
        mate = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"},
                                        {"name": "tasks.create", "policy": "approve"},
                                        {"name": "knowledge.search", "policy": "deny"}])
        emp = self.asker(key)
        ctok = uniq("offer")
        m = self.chat_ok(key, emp, uniq("Offer") + " " + script(
            {"calls": [ask(mate, ctok + " " + script(
                {"calls": [call("tasks__create", title="not offered")]}, {"say": "Could not."}))]},
            {"say": "Done."}))
        self.assertEqual(m["tool_calls"][0]["result"]["answer"], "Could not.")
        creqs = self.requests_for(ctok)
        self.assertEqual(len(creqs), 2, creqs)
        self.assertEqual([t["function"]["name"] for t in creqs[0]["body"]["tools"]],
                         ["tasks__get"])
        err = self.tool_results(creqs[1])[0]["error"]
        self.assertTrue(err.startswith("unknown_tool"), err)
