# SPDX-License-Identifier: MIT
"""Employees that call tools in chat (contract §19), black-box, against the scripted
tool-calling model of tests/mock/openai_mock.py ([[tools:B64]]).

- A turn offers the tools the employee's rules allow (auto, runnable), under their model
  names, with their schemas; a step's calls run, their results go back to the model as `tool`
  messages, and the model is called again until it answers without calls.
- Every call is journaled (running, then completed or failed) and shown: the blocking answer's
  `tool_calls`, the stream's tool.started / tool.completed, the conversation read.
- A call that cannot run (unknown tool, bad arguments, outside the key's scopes) is an error
  result for the model, never a failed turn; the tool's effect is real (tasks.create makes the
  task, tasks.get reads it).
- Limits: WORKFORCE_AGENT_MAX_STEPS model calls, the same call a third time; each model call of
  a live key is charged.
- A later turn's history holds the earlier turn's calls and results.
"""

import base64
import json
import os
import sys
import threading
import uuid

from chatlib import (MOCK_API_KEY, MOCK_MODEL, ChatTestCase, MockChatTestCase, credits_for,
                     uniq)
from harness import GENEROUS_LIMITS, Server, free_port
from oauthlib import browser_connect

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mock"))
import openai_mock  # noqa: E402
import provider_mock  # noqa: E402


def script(*steps):
    return "[[tools:%s]]" % base64.b64encode(json.dumps(list(steps)).encode()).decode()


def call(name, **args):
    return {"name": name, "arguments": args}


class AgentChatTest(MockChatTestCase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_AGENT_MAX_STEPS": "3"}

    @classmethod
    def setUpServer(cls):
        cls.org = "agent-" + uuid.uuid4().hex[:6]
        cls.live = cls.server.create_key(cls.org, tier="manager", credits=100000)
        cls.test = cls.server.create_key(cls.org, mode="test")

    def setUp(self):
        self.mock.reset()

    def employee_with(self, key, rules):
        emp = self.new_employee(key, name="Agent " + uuid.uuid4().hex[:4], role="Helper",
                                category="operations")["id"]
        r = self.server.patch("/v1/employees/" + emp, {"tools": rules}, key=key)
        self.assertEqual(r.status, 200, r)
        return emp

    def model_requests(self, msg):
        """The model calls of the turn of user message 'msg' (a task that a tool created runs
        on the same model, with other messages)."""
        return self.mock_requests(msg)

    def test_a_turn_calls_tools_until_it_answers(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.*", "policy": "auto"}])
        title = "Book the venue " + uuid.uuid4().hex[:6]
        msg = uniq("Please plan it ") + script(
            {"calls": [call("tasks__create", title=title, priority="high")]},
            {"say": "Done: the task is created."})
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["content"], "Done: the task is created.")
        self.assertEqual(m["status"], "completed")
        self.assertEqual(m["stop_reason"], "completed")
        self.assertEqual(len(m["tool_calls"]), 1)
        c = m["tool_calls"][0]
        self.assertEqual((c["tool"], c["status"], c["error"]), ("tasks.create", "completed", None))
        self.assertTrue(c["id"].startswith("call_"))
        self.assertEqual(c["arguments"], {"title": title, "priority": "high"})
        self.assertEqual(c["result"]["title"], title)
        # the task exists, for this employee
        task = self.server.get("/v1/tasks/" + c["result"]["id"], key=key).json
        self.assertEqual((task["title"], task["employee_id"], task["priority"]),
                         (title, emp, "high"))
        # the tool's side effect is an audit entry, the employee its actor (contract §20)
        auditor = self.server.create_key(self.org, mode="test", scopes="audit")
        log = self.server.get("/v1/audit_events?target_id=" + task["id"], key=auditor).json
        self.assertEqual([(e["actor"]["type"], e["actor"]["id"], e["action"], e["mode"])
                          for e in log["audit_events"]], [("employee", emp, "task.create", "test")])
        # the model was offered the rules' tools, then shown its call and the result
        reqs = self.model_requests(msg)
        self.assertEqual(len(reqs), 2, reqs)
        first = reqs[0]["body"]
        names = sorted(t["function"]["name"] for t in first["tools"])
        self.assertEqual(names, ["tasks__create", "tasks__get"])
        second = reqs[1]["body"]["messages"]
        self.assertEqual(second[-2]["role"], "assistant")
        self.assertEqual(second[-2]["tool_calls"][0]["function"]["name"], "tasks__create")
        self.assertEqual(second[-1]["role"], "tool")
        self.assertEqual(second[-1]["tool_call_id"], second[-2]["tool_calls"][0]["id"])
        self.assertEqual(json.loads(second[-1]["content"])["id"], c["result"]["id"])
        # the conversation read, and the message read alone, show the same work
        conv = self.conversation(key, m["conversation_id"])
        reply = conv["messages"][-1]
        self.assertEqual(reply["tool_calls"], m["tool_calls"])
        one = self.server.get("/v1/conversations/%s/messages/%s"
                              % (m["conversation_id"], m["id"]), key=key).json
        self.assertEqual(one, reply)
        self.assertEqual((reply["status"], reply["stop_reason"]), ("completed", "completed"))

    def test_calls_that_cannot_run_go_back_to_the_model(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        msg = uniq("Check things ") + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000"),
                       call("tasks__create", title="not offered"),
                       call("tasks__get", id="wrong member"),
                       {"name": "tasks__get", "arguments": "{not json"}]},
            {"say": "Some of that failed."})
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["status"], "completed")
        calls = m["tool_calls"]
        self.assertEqual([c["status"] for c in calls], ["failed"] * 4)
        self.assertTrue(calls[0]["error"].startswith("task_not_found"), calls[0])
        self.assertTrue(calls[1]["error"].startswith("unknown_tool"), calls[1])
        self.assertTrue(calls[2]["error"].startswith("invalid_arguments"), calls[2])
        self.assertTrue(calls[3]["error"].startswith("invalid_arguments"), calls[3])
        self.assertEqual(calls[3]["arguments"], "{not json")
        tool_msgs = [x for x in self.model_requests(msg)[-1]["body"]["messages"]
                     if x["role"] == "tool"]
        self.assertEqual(len(tool_msgs), 4)
        self.assertIn("error", json.loads(tool_msgs[1]["content"]))

    def test_scopes_of_the_starter(self):
        # a key without the tasks scope: the employee may use tasks.create, the key may not
        key = self.server.create_key(self.org, mode="test",
                                     scopes="chat,employees:read,employees:write")
        emp = self.employee_with(key, [{"name": "tasks.*", "policy": "auto"}])
        msg = uniq("Try it ") + script({"calls": [call("tasks__create", title="x")]},
                                       {"say": "ok"})
        m = self.chat_ok(key, emp, msg)
        self.assertTrue(m["tool_calls"][0]["error"].startswith("permission_denied"), m)

    def test_stream_shows_each_call(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        msg = uniq("Stream it ") + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "Streamed."})
        res = self.stream(key, emp, msg)
        names = res.names()
        self.assertEqual(names[0], "message.created")
        self.assertEqual(names[-1], "message.completed")
        i, j = names.index("tool.started"), names.index("tool.completed")
        self.assertLess(i, j)
        started = res.of("tool.started")[0]["json"]
        ended = res.of("tool.completed")[0]["json"]
        done = res.of("message.completed")[0]["json"]
        self.assertEqual(started["message_id"], done["id"])
        self.assertEqual(started["tool_call"]["status"], "running")
        self.assertEqual(ended["tool_call"]["status"], "failed")
        self.assertEqual(ended["tool_call"]["id"], started["tool_call"]["id"])
        self.assertEqual(done["tool_calls"][0]["id"], started["tool_call"]["id"])
        self.assertEqual(done["content"], "Streamed.")

    def test_limits(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        # WORKFORCE_AGENT_MAX_STEPS=3: three model calls, then the turn stops
        msg = uniq("Loop ") + script(*[{"calls": [call("tasks__get", task_id="task_%024d" % i)]}
                                       for i in range(10)])
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["stop_reason"], "max_steps")
        self.assertIn("limit of 3 model calls", m["content"])
        self.assertEqual(len(self.model_requests(msg)), 3)
        self.assertEqual(len(m["tool_calls"]), 3)
        # the same call a third time stops the turn before it runs
        msg = uniq("Again ") + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000001")]})
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["stop_reason"], "repeated_call")
        self.assertEqual(len(m["tool_calls"]), 2)

    def test_each_model_call_is_charged(self):
        key = self.live
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        before = self.balance(key)
        msg = uniq("Charge ") + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "Charged twice."})
        m = self.chat_ok(key, emp, msg)
        usages = [r["reply"]["usage"] for r in self.model_requests(msg)]
        self.assertEqual(len(usages), 2)
        want = sum(credits_for({"input_tokens": u["prompt_tokens"],
                                "output_tokens": u["completion_tokens"]}) for u in usages)
        self.assertEqual(m["credits_used"], want)
        self.assertEqual(before - self.balance(key), want)
        # a turn stopped by a limit is charged for its model calls, and for nothing more
        before = self.balance(key)
        msg = uniq("Charge loop ") + script(
            *[{"calls": [call("tasks__get", task_id="task_%024d" % i)]} for i in range(10)])
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["stop_reason"], "max_steps")
        usages = [r["reply"]["usage"] for r in self.model_requests(msg)]
        self.assertEqual(len(usages), 3)
        want = sum(credits_for({"input_tokens": u["prompt_tokens"],
                                "output_tokens": u["completion_tokens"]}) for u in usages)
        self.assertEqual((m["credits_used"], before - self.balance(key)), (want, want))

    def test_the_last_credit_pays_the_first_step(self):
        # An organization left with 1 credit: the turn holds it; the step's model call is
        # worth it, so it is taken (not given back at the stop), and the turn stops for credits.
        org = "agent1c-" + uuid.uuid4().hex[:6]
        key = self.server.create_key(org, tier="manager", credits=1)
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        msg = uniq("Last credit ") + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "Never said."})
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["stop_reason"], "insufficient_credits", m)
        self.assertEqual(len(self.model_requests(msg)), 1)
        self.assertEqual((m["credits_used"], self.balance(key)), (1, 0))

    def test_a_conversation_is_busy_while_its_turn_runs(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        # the model's second call waits 3 s: the reply is in_progress meanwhile
        msg = uniq("Busy ") + "[[pause:3000]]" + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "Finally."})
        done = {}
        th = threading.Thread(target=lambda: done.update(m=self.chat(key, emp, msg)))
        th.start()
        try:
            conv = self.wait_for(lambda: self.find_conversation(key, msg[:80], emp), timeout=10)
            self.assertIsNotNone(conv)
            running = self.wait_for(
                lambda: self.conversation(key, conv["id"])["messages"][-1].get("status")
                == "in_progress", timeout=10)
            self.assertTrue(running, "the reply was never seen in_progress")
            r = self.chat(key, emp, uniq("Meanwhile"), conversation_id=conv["id"])
            self.assertError(r, 409, "conversation_busy", "conversation_id")
        finally:
            th.join(60)
        self.assertEqual(done["m"].json["content"], "Finally.")
        self.chat_ok(key, emp, uniq("Now"), conversation_id=conv["id"])

    def test_history_holds_the_calls(self):
        key = self.test
        emp = self.employee_with(key, [{"name": "tasks.get", "policy": "auto"}])
        msg = uniq("First ") + script(
            {"calls": [call("tasks__get", task_id="task_000000000000000000000000")]},
            {"say": "First done."})
        m = self.chat_ok(key, emp, msg)
        follow = uniq("And then?")
        self.chat_ok(key, emp, follow, conversation_id=m["conversation_id"])
        body = [r for r in self.mock.requests()
                if r["body"]["messages"][-1].get("content") == follow][-1]["body"]
        roles = [x["role"] for x in body["messages"]]
        # ..., user, assistant (its calls), tool (the result), assistant (the answer), user
        self.assertEqual(roles[-5:], ["user", "assistant", "tool", "assistant", "user"], roles)
        self.assertEqual(body["messages"][-4]["tool_calls"][0]["function"]["name"],
                         "tasks__get")
        self.assertEqual(body["messages"][-2]["content"], "First done.")


class AgentIntegrationTest(ChatTestCase):
    """Integration tools in a turn: offered only while the provider is connected, and acting
    through the organization's connection (tests/mock/provider_mock.py)."""

    @classmethod
    def setUpClass(cls):
        cls.mock = openai_mock.MockLLM().start()
        cls.provider = provider_mock.ProviderMock().start()
        port = free_port()
        cls.base = "http://127.0.0.1:%d" % port
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_LLM": "openai",
               "WORKFORCE_LLM_BASE_URL": cls.mock.base_url, "WORKFORCE_LLM_MODEL": MOCK_MODEL,
               "WORKFORCE_LLM_API_KEY": MOCK_API_KEY, "WORKFORCE_TEST_LLM": "provider",
               "WORKFORCE_PUBLIC_URL": cls.base}
        env.update(cls.provider.env_for())
        cls.server = Server(env=env)
        try:
            cls.server.start(port=port)
        except BaseException:
            cls.server.cleanup()
            cls.mock.stop()
            cls.provider.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.mock.stop()
            cls.provider.stop()

    def mock_requests(self, last_user):
        return [r for r in self.mock.requests() if r["last_user"] == last_user]

    def provider_requests(self, prefix):
        import urllib.request
        with urllib.request.urlopen(self.provider.base_url + "/__requests?prefix=" + prefix,
                                    timeout=10) as r:
            doc = json.loads(r.read())
        return doc["requests"] if isinstance(doc, dict) else doc

    def test_slack_tools_through_the_connection(self):
        key = self.server.create_key("agent-i-" + uuid.uuid4().hex[:6], mode="test")
        emp = self.assertJson(self.server.post("/v1/employees", {
            "name": "Poster", "role": "Ops", "category": "operations",
            "tools": [{"name": "slack.*", "policy": "auto"}]}, key=key))["id"]
        # not connected: no Slack tool is offered (and no tool at all here)
        msg = uniq("Before ") + script({"say": "nothing to do"})
        self.chat_ok(key, emp, msg)
        self.assertNotIn("tools", self.mock_requests(msg)[0]["body"])
        c = self.assertJson(self.server.post("/v1/integrations/slack/connect", {}, key=key))
        r = browser_connect(self.server, self.base, c["authorization_url"], "slack")
        self.assertEqual(r.status, 200, r)
        msg = uniq("Post it ") + script(
            {"calls": [call("slack__post_message", channel="#general", text="Deploy done")]},
            {"say": "Posted."})
        m = self.chat_ok(key, emp, msg)
        offered = sorted(t["function"]["name"] for t in self.mock_requests(msg)[0]["body"]["tools"])
        self.assertEqual(offered, ["slack__list_channels", "slack__post_message"])
        tc = m["tool_calls"][0]
        self.assertEqual((tc["tool"], tc["status"]), ("slack.post_message", "completed"), tc)
        self.assertEqual(tc["result"]["id"], "1700000000.000001")
        [req] = self.provider_requests("/slack/api/chat.postMessage")
        self.assertEqual(req["body"], {"channel": "#general", "text": "Deploy done"})
        # the post is an audit entry of the employee, naming the journal's call
        slug = self.server.get("/v1/account", key=key).json["name"]
        auditor = self.server.create_key(slug, mode="test", scopes="audit")
        log = self.server.get("/v1/audit_events?action=tool.slack.post_message",
                              key=auditor).json["audit_events"]
        self.assertEqual([(e["actor"]["id"], e["target"]) for e in log],
                         [(emp, {"type": "tool_call", "id": tc["id"]})])
        # the provider's refusal goes back to the model as the call's error
        msg = uniq("Nowhere ") + script(
            {"calls": [call("slack__post_message", channel="#nowhere", text="x")]},
            {"say": "It failed."})
        m = self.chat_ok(key, emp, msg)
        self.assertEqual(m["tool_calls"][0]["status"], "failed")
        self.assertIn("channel_not_found", m["tool_calls"][0]["error"])
        self.assertNotIn("xoxb", json.dumps(m))

    def test_then_a_slack_post_waits_for_its_approval(self):
        # the README's walk-through: Slack under approve, a chat that pauses, the decision
        # (with the text edited), the message posted through the connection (after
        # test_slack_tools_through_the_connection, which counts the provider's requests)
        org = "agent-a-" + uuid.uuid4().hex[:6]
        key = self.server.create_key(org, mode="test")
        approver = self.server.create_key(org, mode="test", scopes="approvals")
        emp = self.assertJson(self.server.post("/v1/employees", {
            "name": "Careful poster", "role": "Ops", "category": "operations",
            "tools": [{"name": "slack.list_channels", "policy": "auto"},
                      {"name": "slack.*", "policy": "approve"}]}, key=key))["id"]
        c = self.assertJson(self.server.post("/v1/integrations/slack/connect", {}, key=key))
        r = browser_connect(self.server, self.base, c["authorization_url"], "slack")
        self.assertEqual(r.status, 200, r)
        msg = uniq("Tell general ") + script(
            {"calls": [call("slack__post_message", channel="#general", text="Standup at 10")]},
            {"say": "Posted after approval."})
        before = len(self.provider_requests("/slack/api/chat.postMessage"))
        m = self.assertJson(self.chat(key, emp, msg), 200)
        self.assertEqual(m["status"], "requires_approval", m)
        tc = m["tool_calls"][0]
        self.assertEqual((tc["tool"], tc["status"]), ("slack.post_message", "pending_approval"))
        # nothing posted while it waits
        self.assertEqual(len(self.provider_requests("/slack/api/chat.postMessage")), before)
        r = self.server.post("/v1/approvals/%s/approve" % tc["approval_id"],
                             {"arguments": {"channel": "#general",
                                            "text": "Standup at 10:00 sharp"}}, key=approver)
        self.assertEqual(r.status, 200, r)
        done = self.wait_for(lambda: (lambda x: x if x["status"] == "completed" else None)(
            self.server.get("/v1/conversations/%s/messages/%s" % (m["conversation_id"],
                                                                  m["id"]), key=key).json),
            timeout=20)
        self.assertTrue(done, "the turn did not go on")
        self.assertEqual(done["content"], "Posted after approval.")
        self.assertEqual(done["tool_calls"][0]["status"], "completed")
        reqs = self.provider_requests("/slack/api/chat.postMessage")
        self.assertEqual(len(reqs), before + 1)
        self.assertEqual(reqs[-1]["body"], {"channel": "#general",
                                            "text": "Standup at 10:00 sharp"})


class AgentMcpTest(MockChatTestCase):
    """The tools of an organization's MCP server in a turn: offered under their model names with
    the server's own schema, arguments checked against it before the server is called, the
    server's answer (or its isError) given back to the model. The server is one made with the
    official TypeScript SDK (tests/npm/mcp_server.mjs)."""

    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_MCP_ALLOW_PRIVATE": "1"}

    @classmethod
    def setUpServer(cls):
        from test_mcp_servers import Peer
        cls.peer = Peer()
        cls.key = cls.server.create_key("agent-mcp-" + uuid.uuid4().hex[:6], mode="test")

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.peer.stop()

    def test_mcp_tools_in_a_turn(self):
        key = self.key
        r = self.server.post("/v1/mcp_servers", {"name": "peer", "url": self.peer.url("json")},
                             key=key)
        self.assertEqual(self.assertJson(r)["status"], "ok", r)
        emp = self.assertJson(self.server.post("/v1/employees", {
            "name": "Mcp user", "role": "Ops", "category": "operations",
            "tools": [{"name": "mcp.peer.*", "policy": "auto"}]}, key=key))["id"]
        msg = uniq("Use the peer ") + script(
            {"calls": [call("mcp__peer__echo", text="hello"),
                       call("mcp__peer__add", a="one", b=2),
                       call("mcp__peer__fail")]},
            {"say": "Peer used."})
        m = self.chat_ok(key, emp, msg)
        offered = {t["function"]["name"]: t["function"]["parameters"]
                   for t in self.mock_requests(msg)[0]["body"]["tools"]}
        self.assertIn("mcp__peer__echo", offered)
        self.assertEqual(offered["mcp__peer__echo"]["required"], ["text"])
        echo, add, fail = m["tool_calls"]
        self.assertEqual((echo["tool"], echo["status"], echo["result"]),
                         ("mcp.peer.echo", "completed", "echo: hello"), echo)
        # checked against the server's schema: never sent
        self.assertEqual(add["status"], "failed")
        self.assertTrue(add["error"].startswith("invalid_arguments: a: must be of type number"),
                        add)
        self.assertEqual(fail["status"], "failed")
        self.assertTrue(fail["error"].startswith("tool_error"), fail)
        self.assertEqual(m["content"], "Peer used.")

    def test_mcp_tools_in_a_task_run(self):
        key = self.key
        r = self.server.post("/v1/mcp_servers", {"name": "runpeer",
                                                 "url": self.peer.url("json")}, key=key)
        self.assertEqual(self.assertJson(r)["status"], "ok", r)
        emp = self.assertJson(self.server.post("/v1/employees", {
            "name": "Mcp runner", "role": "Ops", "category": "operations",
            "tools": [{"name": "mcp.runpeer.*", "policy": "auto"}]}, key=key))["id"]
        task = self.assertJson(self.server.post("/v1/tasks", {
            "employee_id": emp, "title": uniq("Echo through the peer"),
            "description": uniq("Run echo ") + script(
                {"calls": [call("mcp__runpeer__echo", text="from a run")]},
                {"say": "Echoed."})}, key=key))
        done = self.wait_for(lambda: (lambda t: t if t["status"] in ("completed", "failed")
                                      else None)(
            self.server.get("/v1/tasks/" + task["id"], key=key).json), timeout=30)
        self.assertTrue(done, "the task did not end")
        self.assertEqual((done["status"], done["result"]), ("completed", "Echoed."), done)
        run = self.server.get("/v1/tasks/%s/runs" % task["id"], key=key).json["runs"][0]
        c = run["tool_calls"][0]
        self.assertEqual((c["tool"], c["status"], c["result"]),
                         ("mcp.runpeer.echo", "completed", "echo: from a run"), c)

    def test_a_tool_the_server_lost_reads_its_list_again(self):
        from test_approvals import db_exec
        key = self.key
        r = self.server.post("/v1/mcp_servers", {"name": "lost", "url": self.peer.url("json")},
                             key=key)
        srv = self.assertJson(r)
        self.assertEqual(srv["status"], "ok", r)
        # the list as stored names a tool the server does not have (any more)
        tools = [{"name": t["name"], "description": t["description"], "effect": t["effect"],
                  "input_schema": {"type": "object"}} for t in srv["tools"]]
        tools.append({"name": "ghost", "description": "Gone.", "effect": "write",
                      "input_schema": {"type": "object"}})
        db_exec(self.server, "UPDATE mcp_servers SET tools = ? WHERE id = ?",
                (json.dumps(tools), srv["id"]))
        names = [t["name"] for t in self.server.get("/v1/mcp_servers/" + srv["id"],
                                                    key=key).json["tools"]]
        self.assertIn("ghost", names)
        emp = self.assertJson(self.server.post("/v1/employees", {
            "name": "Lost user", "role": "Ops", "category": "operations",
            "tools": [{"name": "mcp.lost.*", "policy": "auto"}]}, key=key))["id"]
        msg = uniq("Call the ghost ") + script({"calls": [call("mcp__lost__ghost")]},
                                               {"say": "It is gone."})
        m = self.chat_ok(key, emp, msg)
        c = m["tool_calls"][0]
        self.assertEqual(c["status"], "failed")
        self.assertTrue(c["error"].startswith("unknown_tool: the MCP server lost has no tool"),
                        c)
        now = self.server.get("/v1/mcp_servers/" + srv["id"], key=key).json
        self.assertNotIn("ghost", [t["name"] for t in now["tools"]])
        self.assertIn("echo", [t["name"] for t in now["tools"]])
