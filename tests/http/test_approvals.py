# SPDX-License-Identifier: MIT
"""Approvals (contract §19), black-box, against the scripted tool-calling model of
tests/mock/openai_mock.py ([[tools:B64]]).

- A call to a tool whose policy is `approve` pauses the chat turn: the blocking answer is the
  message with status requires_approval (its pending call names the approval), the stream
  sends approval.requested and ends with message.completed whose status says it paused; the
  turn holds nothing (the employee is not busy) and the conversation refuses a new message.
- Only a key whose scopes name `approvals` decides (a key without scopes is refused); edited
  arguments are checked against the tool's schema; a decision is taken once (409).
- Approved, the call runs with the arguments as approved and the turn goes on to its end;
  rejected, the model is told why; the turn ends with message.completed (an event).
- A paused turn survives the server killed with SIGKILL: approved after the restart, it ends.
- An approval nobody decides expires (the keeper's look): the model is told it was rejected.
- A turn cut by SIGKILL while a tool call runs goes on after the restart: that call is failed
  as "interrupted", never run again, and the model is told.
- On PostgreSQL with several nodes, a turn paused on one node goes on on another.
"""


def turn_end(tc, key, m, timeout=20.0):
    """The message 'm' once its turn has ended (completed or failed), read with 'key' by test
    case 'tc'; fails the test if it has not within 'timeout' seconds."""
    path = "/v1/conversations/%s/messages/%s" % (m["conversation_id"], m["id"])

    def ended():
        x = tc.server.get(path, key=key).json
        return x if x["status"] in ("completed", "failed") else None
    got = tc.wait_for(ended, timeout=timeout)
    tc.assertTrue(got, "the turn of %s did not end within %.0f s" % (m["id"], timeout))
    return got


def db_exec(server, sql, args=()):
    """Run 'sql' on the server's database behind its back (SQLite file or PostgreSQL URL)."""
    if PG_URL:
        for a in args:
            sql = sql.replace("?", "'%s'" % a.replace("'", "''"), 1)
        subprocess.run(["psql", server.db, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       timeout=60)
        return
    c = sqlite3.connect(server.db, timeout=30)
    try:
        c.execute(sql, args)
        c.commit()
    finally:
        c.close()

import base64
import json
import sqlite3
import subprocess
import threading
import time
import uuid

from chatlib import MockChatTestCase, sse_post, uniq
from harness import PG_URL, pg_only


def script(*steps):
    return "[[tools:%s]]" % base64.b64encode(json.dumps(list(steps)).encode()).decode()


def call(name, **args):
    return {"name": name, "arguments": args}


class ApprovalsTest(MockChatTestCase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider"}

    @classmethod
    def setUpServer(cls):
        cls.org = "apr-" + uuid.uuid4().hex[:6]
        cls.key = cls.server.create_key(cls.org, mode="test")
        cls.decider = cls.server.create_key(cls.org, mode="test",
                                            scopes="approvals,chat,conversations,tasks")
        cls.reader = cls.server.create_key(cls.org, mode="test", scopes="chat,tasks")

    def setUp(self):
        self.mock.reset()

    def employee_with(self, rules):
        emp = self.new_employee(self.key, name="Approver " + uuid.uuid4().hex[:4],
                                role="Helper", category="operations")["id"]
        r = self.server.patch("/v1/employees/" + emp, {"tools": rules}, key=self.key)
        self.assertEqual(r.status, 200, r)
        return emp

    def message(self, m):
        r = self.server.get("/v1/conversations/%s/messages/%s"
                            % (m["conversation_id"], m["id"]), key=self.key)
        self.assertEqual(r.status, 200, r)
        return r.json

    def ended(self, m, timeout=20.0):
        return turn_end(self, self.key, m, timeout)

    def paused(self, emp, title, say="The task is made."):
        msg = uniq("Make a task ") + script(
            {"calls": [call("tasks__create", title=title)]},
            {"say": say})
        m = self.assertJson(self.chat(self.key, emp, msg), 200)
        return msg, m

    def test_approve_with_edited_arguments(self):
        emp = self.employee_with([{"name": "tasks.create", "policy": "approve"},
                                  {"name": "tasks.get", "policy": "auto"}])
        title = "Order chairs " + uuid.uuid4().hex[:6]
        msg, m = self.paused(emp, title)
        self.assertEqual(m["status"], "requires_approval", m)
        self.assertEqual(len(m["tool_calls"]), 1)
        c = m["tool_calls"][0]
        self.assertEqual((c["tool"], c["status"]), ("tasks.create", "pending_approval"))
        self.assertTrue(c["approval_id"].startswith("apr_"), c)
        # the model was offered the approve tool, once
        self.assertEqual(len(self.mock_requests(msg)), 1)
        # nothing ran: no task of that title
        tasks = self.server.get("/v1/tasks?employee_id=" + emp, key=self.key).json["tasks"]
        self.assertEqual([t for t in tasks if t["title"] == title], [])
        # the read shows the pause; the employee holds nothing; the conversation is busy
        self.assertEqual(self.message(m)["status"], "requires_approval")
        self.assertEqual(self.server.get("/v1/employees/" + emp, key=self.key).json["status"],
                         "idle")
        r = self.chat(self.key, emp, "another", conversation_id=m["conversation_id"])
        self.assertEqual((r.status, r.json["error"]["code"]), (409, "conversation_busy"))
        # however long it waits (a running turn is given up on after 6 minutes; a paused one
        # is not)
        db_exec(self.server, "UPDATE messages SET created_at = created_at - 86400000"
                             " WHERE id = ?", (m["id"],))
        r = self.chat(self.key, emp, "another", conversation_id=m["conversation_id"])
        self.assertEqual((r.status, r.json["error"]["code"]), (409, "conversation_busy"))
        # the approval, listed and read
        a = self.server.get("/v1/approvals/" + c["approval_id"], key=self.key).json
        self.assertEqual((a["status"], a["tool"], a["employee_id"], a["message_id"],
                          a["conversation_id"], a["arguments"]),
                         ("pending", "tasks.create", emp, m["id"], m["conversation_id"],
                          {"title": title}))
        self.assertEqual(a["requested_by"]["type"], "key")
        page = self.server.get("/v1/approvals?status=pending&employee_id=" + emp,
                               key=self.key).json
        self.assertEqual([x["id"] for x in page["approvals"]], [a["id"]])
        # who decides: not a key without scopes, not a key without the scope
        for k in (self.key, self.reader):
            r = self.server.post("/v1/approvals/%s/approve" % a["id"], {}, key=k)
            self.assertEqual(r.status, 403, r)
        # edited arguments are checked against the tool's schema
        r = self.server.post("/v1/approvals/%s/approve" % a["id"],
                             {"arguments": {"title": 5}}, key=self.decider)
        self.assertEqual((r.status, r.json["error"]["param"]), (400, "arguments"), r)
        edited = title + " (edited)"
        r = self.server.post("/v1/approvals/%s/approve" % a["id"],
                             {"arguments": {"title": edited, "priority": "high"}},
                             key=self.decider)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["status"], r.json["decided_by"]["type"], r.json["arguments"]),
                         ("approved", "key", {"title": edited, "priority": "high"}))
        self.assertIsNotNone(r.json["decided_at"])
        # decided once
        r = self.server.post("/v1/approvals/%s/reject" % a["id"], {}, key=self.decider)
        self.assertEqual((r.status, r.json["error"]["code"]), (409, "approval_not_pending"))
        # the turn goes on: the call runs as approved, the model answers
        done = self.ended(m)
        self.assertEqual(done["status"], "completed", done)
        self.assertEqual(done["content"], "The task is made.")
        c = done["tool_calls"][0]
        self.assertEqual((c["status"], c["arguments"], c["approval_id"]),
                         ("completed", {"title": edited, "priority": "high"}, a["id"]))
        self.assertEqual(c["result"]["title"], edited)
        task = self.server.get("/v1/tasks/" + c["result"]["id"], key=self.key).json
        self.assertEqual((task["title"], task["priority"]), (edited, "high"))
        reqs = self.mock_requests(msg)
        self.assertEqual(len(reqs), 2, reqs)
        last = reqs[1]["body"]["messages"]
        self.assertEqual(last[-1]["role"], "tool")
        self.assertEqual(json.loads(last[-1]["content"])["title"], edited)
        # the conversation is free again
        m2 = self.chat_ok(self.key, emp, "thanks", conversation_id=m["conversation_id"])
        self.assertEqual(m2["status"], "completed")
        # the events: requested, decided, and the paused turn's end
        types = {}
        for t in ("approval.requested", "approval.decided", "message.completed"):
            evs = self.server.get("/v1/events?type=" + t, key=self.key).json["events"]
            types[t] = evs
        self.assertTrue(any(e["data"]["object"]["id"] == a["id"]
                            for e in types["approval.requested"]))
        self.assertTrue(any(e["data"]["object"]["id"] == a["id"]
                            and e["data"]["object"]["status"] == "approved"
                            for e in types["approval.decided"]))
        self.assertTrue(any(e["data"]["object"]["id"] == m["id"]
                            for e in types["message.completed"]))

    def test_reject_tells_the_model(self):
        emp = self.employee_with([{"name": "tasks.*", "policy": "approve"}])
        title = "Never " + uuid.uuid4().hex[:6]
        msg, m = self.paused(emp, title, say="Understood, I will not.")
        a = m["tool_calls"][0]["approval_id"]
        r = self.server.post("/v1/approvals/%s/reject" % a,
                             {"reason": "Not this week."}, key=self.decider)
        self.assertEqual((r.status, r.json["status"], r.json["reason"]),
                         (200, "rejected", "Not this week."), r)
        done = self.ended(m)
        self.assertEqual(done["status"], "completed", done)
        c = done["tool_calls"][0]
        self.assertEqual((c["status"], c["result"]),
                         ("rejected", {"error": "rejected", "reason": "Not this week."}))
        last = self.mock_requests(msg)[-1]["body"]["messages"][-1]
        self.assertEqual(json.loads(last["content"])["reason"], "Not this week.")
        tasks = self.server.get("/v1/tasks?employee_id=" + emp, key=self.key).json["tasks"]
        self.assertEqual([t for t in tasks if t["title"] == title], [])
        r = self.server.get("/v1/approvals?status=rejected&employee_id=" + emp, key=self.key)
        self.assertEqual([x["id"] for x in r.json["approvals"]], [a])

    def test_an_idempotent_replay_answers_the_pause(self):
        emp = self.employee_with([{"name": "tasks.create", "policy": "approve"}])
        msg = uniq("Idem ") + script({"calls": [call("tasks__create", title="once")]},
                                     {"say": "Made once."})
        idem = {"Idempotency-Key": "apr-" + uuid.uuid4().hex}
        first = self.chat(self.key, emp, msg, headers=idem)
        m = self.assertJson(first, 200)
        self.assertEqual(m["status"], "requires_approval")
        again = self.chat(self.key, emp, msg, headers=idem)
        self.assertEqual((again.status, again.json), (200, m))
        self.assertEqual(len(self.mock_requests(msg)), 1, "the model was not called again")
        r = self.server.post("/v1/approvals/%s/approve" % m["tool_calls"][0]["approval_id"], {},
                             key=self.decider)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.ended(m)["status"], "completed")
        # the snapshot it answered, even now
        again = self.chat(self.key, emp, msg, headers=idem)
        self.assertEqual((again.status, again.json), (200, m))

    def test_stream_shows_the_pause(self):
        emp = self.employee_with([{"name": "tasks.create", "policy": "approve"}])
        msg = uniq("Stream a task ") + script(
            {"calls": [call("tasks__create", title="streamed")]}, {"say": "ok"})
        res = self.stream(self.key, emp, msg)
        names = [e["event"] for e in res.events]
        self.assertIn("approval.requested", names, names)
        self.assertEqual(names[-1], "message.completed", names)
        end = res.events[-1]["json"]
        self.assertEqual(end["status"], "requires_approval")
        req = [e for e in res.events if e["event"] == "approval.requested"][0]["json"]
        self.assertEqual(req["message_id"], end["id"])
        self.assertEqual(req["approval"]["status"], "pending")
        ids = [int(e["id"]) for e in res.events]
        self.assertEqual(ids, list(range(1, len(ids) + 1)))

    def events(self, m, last=None, timeout=30):
        headers = {"Last-Event-ID": str(last)} if last is not None else None
        res = sse_post(self.server, "/v1/conversations/%s/messages/%s/events"
                       % (m["conversation_id"], m["id"]), None, key=self.key, method="GET",
                       headers=headers, timeout=timeout)
        self.assertEqual(res.status, 200, getattr(res, "response", None))
        return res.events

    def test_events_are_kept_and_replayed(self):
        emp = self.employee_with([{"name": "tasks.create", "policy": "approve"}])
        title = "Replay " + uuid.uuid4().hex[:6]
        msg = uniq("Replay a task ") + "[[pause:1500]]" + script(
            {"calls": [call("tasks__create", title=title)]}, {"say": "Replayed."})
        m = self.assertJson(self.chat(self.key, emp, msg), 200)
        self.assertEqual(m["status"], "requires_approval")
        # paused: the events so far, ending with the pause; the stream then ends
        first = self.events(m)
        names = [e["event"] for e in first]
        self.assertEqual(names[0], "message.created", names)
        self.assertIn("approval.requested", names)
        self.assertEqual(names[-1], "message.completed")
        self.assertEqual(first[-1]["json"]["status"], "requires_approval")
        ids = [int(e["id"]) for e in first]
        self.assertEqual(ids, list(range(1, len(ids) + 1)))
        paused_at = ids[-1]
        # approved: a client following from the pause gets the rest, live, to the end
        a = m["tool_calls"][0]["approval_id"]
        r = self.server.post("/v1/approvals/%s/approve" % a, {}, key=self.decider)
        self.assertEqual(r.status, 200, r)
        # (a paused message replays and ends: follow once the turn went on)
        self.assertTrue(self.wait_for(lambda: self.message(m)["status"] != "requires_approval"))
        rest = self.events(m, last=paused_at)
        names = [e["event"] for e in rest]
        self.assertNotIn("message.created", names)
        self.assertIn("tool.started", names)
        self.assertIn("tool.completed", names)
        self.assertEqual(names[-1], "message.completed", names)
        self.assertEqual(rest[-1]["json"]["status"], "completed")
        self.assertEqual(rest[-1]["json"]["content"], "Replayed.")
        self.assertEqual([int(e["id"]) for e in rest],
                         list(range(paused_at + 1, paused_at + 1 + len(rest))))
        # the whole sequence, replayed: one message.created, the pause, then the rest
        whole = self.events(m)
        self.assertEqual([e["id"] for e in whole], [e["id"] for e in first + rest])
        self.assertEqual([e["event"] for e in whole].count("message.created"), 1)
        # after the last event: nothing more, and the stream ends
        self.assertEqual(self.events(m, last=int(whole[-1]["id"])), [])

    def test_events_of_a_reply_without_tools(self):
        emp = self.employee_with([{"name": "tasks.create", "policy": "approve"}])
        m = self.chat_ok(self.key, emp, uniq("Just talk "))
        evs = self.events(m)
        self.assertEqual([(e["id"], e["event"]) for e in evs],
                         [("1", "message.created"), ("2", "message.delta"),
                          ("3", "message.completed")])
        self.assertEqual(evs[1]["json"]["delta"], m["content"])
        self.assertEqual(evs[2]["json"]["id"], m["id"])
        self.assertEqual(evs[2]["json"]["content"], m["content"])
        self.assertEqual([e["id"] for e in self.events(m, last=2)], ["3"])
        r = self.server.get("/v1/conversations/%s/messages/%s/events"
                            % (m["conversation_id"], m["id"]), key=self.key,
                            headers={"Last-Event-ID": "x"})
        self.assertEqual((r.status, r.json["error"]["param"]), (400, "Last-Event-ID"))
        r = self.server.get("/v1/conversations/%s/messages/msg_000000000000000000000000/events"
                            % m["conversation_id"], key=self.key)
        self.assertEqual((r.status, r.json["error"]["code"]), (404, "message_not_found"))

    def test_doors_that_cannot_pause_offer_no_approve_tool(self):
        emp = self.employee_with([{"name": "tasks.create", "policy": "approve"},
                                  {"name": "tasks.get", "policy": "auto"}])
        # POST /v1/chat offers both
        msg = uniq("Offer chat ") + script({"say": "hi"})
        self.chat_ok(self.key, emp, msg)
        offered = [t["function"]["name"] for t in self.mock_requests(msg)[0]["body"]["tools"]]
        self.assertEqual(sorted(offered), ["tasks__create", "tasks__get"])
        # MCP's ask_employee and the OpenAI door cannot pause: the approve tool is not offered
        msg = uniq("Offer mcp ") + script({"say": "hi"})
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "ask_employee",
                           "arguments": {"employee_id": emp, "message": msg}}}
        r = self.server.post("/v1/mcp", body, key=self.key, timeout=60)
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json["result"].get("isError"), False, r.json)
        offered = [t["function"]["name"] for t in self.mock_requests(msg)[0]["body"]["tools"]]
        self.assertEqual(offered, ["tasks__get"])
        msg = uniq("Offer openai ") + script({"say": "hi"})
        r = self.server.post("/v1/openai/chat/completions",
                             {"model": emp, "messages": [{"role": "user", "content": msg}]},
                             key=self.key, timeout=60)
        self.assertEqual(r.status, 200, r)
        offered = [t["function"]["name"] for t in self.mock_requests(msg)[0]["body"]["tools"]]
        self.assertEqual(offered, ["tasks__get"])

    def test_unknown_approval(self):
        r = self.server.get("/v1/approvals/apr_000000000000000000000000", key=self.key)
        self.assertEqual((r.status, r.json["error"]["code"]), (404, "approval_not_found"))
        r = self.server.get("/v1/approvals?status=maybe", key=self.key)
        self.assertEqual((r.status, r.json["error"]["param"]), (400, "status"))


class ApprovalAfterKillTest(MockChatTestCase):
    """A paused turn is in the database only: the server killed, it is decided and ends."""

    mock_env = {"WORKFORCE_TEST_LLM": "provider"}

    @classmethod
    def setUpServer(cls):
        cls.org = "aprk-" + uuid.uuid4().hex[:6]
        cls.key = cls.server.create_key(cls.org, mode="test")
        cls.decider = cls.server.create_key(cls.org, mode="test", scopes="approvals")

    def test_paused_turn_survives_kill(self):
        emp = self.new_employee(self.key, name="Survivor", role="Helper",
                                category="operations")["id"]
        self.server.patch("/v1/employees/" + emp,
                          {"tools": [{"name": "tasks.create", "policy": "approve"}]},
                          key=self.key)
        title = "After the crash " + uuid.uuid4().hex[:6]
        msg = uniq("Crash ") + script({"calls": [call("tasks__create", title=title)]},
                                      {"say": "Made after all."})
        m = self.assertJson(self.chat(self.key, emp, msg), 200)
        self.assertEqual(m["status"], "requires_approval")
        a = m["tool_calls"][0]["approval_id"]
        self.server.kill()
        self.server.start()
        r = self.server.post("/v1/approvals/%s/approve" % a, {}, key=self.decider)
        self.assertEqual(r.status, 200, r)
        done = turn_end(self, self.key, m)
        self.assertEqual(done["content"], "Made after all.")
        self.assertEqual(done["tool_calls"][0]["status"], "completed")


class ApprovalKeeperTest(MockChatTestCase):
    """What the keeper's look does (every third of WORKFORCE_LEASE_SECONDS, here 1 s)."""

    mock_env = {"WORKFORCE_TEST_LLM": "provider", "WORKFORCE_LEASE_SECONDS": "3",
                "WORKFORCE_MCP_ALLOW_PRIVATE": "1"}

    @classmethod
    def setUpServer(cls):
        from test_mcp_servers import Peer
        cls.peer = Peer()
        cls.org = "aprx-" + uuid.uuid4().hex[:6]
        cls.key = cls.server.create_key(cls.org, mode="test")

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.peer.stop()

    def employee(self, rules):
        emp = self.new_employee(self.key, name="Keeper " + uuid.uuid4().hex[:4], role="Helper",
                                category="operations")["id"]
        r = self.server.patch("/v1/employees/" + emp, {"tools": rules}, key=self.key)
        self.assertEqual(r.status, 200, r)
        return emp

    def test_an_undecided_approval_expires(self):
        emp = self.employee([{"name": "tasks.create", "policy": "approve"}])
        msg = uniq("Expire ") + script({"calls": [call("tasks__create", title="late")]},
                                        {"say": "It expired."})
        m = self.assertJson(self.chat(self.key, emp, msg), 200)
        a = m["tool_calls"][0]["approval_id"]
        expires = self.server.get("/v1/approvals/" + a, key=self.key).json["expires_at"]
        self.assertEqual(expires[:4], time.strftime("%Y", time.gmtime(time.time() + 86400)))
        # its time passes (the keeper reads expires_at)
        db_exec(self.server, "UPDATE approvals SET expires_at = 1 WHERE id = ?", (a,))
        got = self.wait_for(lambda: self.server.get("/v1/approvals/" + a, key=self.key)
                            .json["status"] == "expired", timeout=15)
        self.assertTrue(got, "the approval did not expire")
        p = self.server.get("/v1/approvals/" + a, key=self.key).json
        self.assertEqual((p["decided_by"]["type"], p["decided_by"]["id"]), ("system", None))
        done = turn_end(self, self.key, m)
        self.assertEqual(done["tool_calls"][0]["status"], "rejected")
        self.assertEqual(done["content"], "It expired.")
        evs = self.server.get("/v1/events?type=approval.decided", key=self.key).json["events"]
        self.assertTrue(any(e["data"]["object"]["id"] == a and
                            e["data"]["object"]["status"] == "expired" for e in evs))
        r = self.server.post("/v1/approvals/%s/approve" % a, {}, key=self.key)
        self.assertEqual(r.status, 403)

    def test_a_turn_cut_by_kill_goes_on(self):
        r = self.server.post("/v1/mcp_servers", {"name": "peer", "url": self.peer.url("json")},
                             key=self.key)
        self.assertEqual(self.assertJson(r)["status"], "ok", r)
        emp = self.employee([{"name": "mcp.peer.*", "policy": "auto"}])
        msg = uniq("Cut ") + script({"calls": [call("mcp__peer__sleep", ms=20000)]},
                                    {"say": "Went on after the cut."})
        th = threading.Thread(target=lambda: self.chat(self.key, emp, msg), daemon=True)
        th.start()
        conv = self.wait_for(lambda: self.find_conversation(self.key, msg[:80], emp), timeout=15)
        self.assertIsNotNone(conv)
        running = self.wait_for(lambda: (lambda ms: ms[-1] if ms and ms[-1].get("tool_calls")
                                         and ms[-1]["tool_calls"][0]["status"] == "running"
                                         else None)(
            self.conversation(self.key, conv["id"])["messages"]), timeout=15)
        self.assertTrue(running, "the call never ran")
        self.server.kill()
        self.server.start()
        m = {"conversation_id": conv["id"], "id": running["id"]}
        done = turn_end(self, self.key, m)
        self.assertEqual(done["status"], "completed", done)
        c = done["tool_calls"][0]
        self.assertEqual((c["status"], c["error"], c["result"]),
                         ("failed", "interrupted", {"error": "interrupted"}))
        self.assertEqual(done["content"], "Went on after the cut.")
        # the model was told, and the call was not made again
        reqs = self.mock_requests(msg)
        self.assertEqual(json.loads(reqs[-1]["body"]["messages"][-1]["content"]),
                         {"error": "interrupted"})
        th.join(5)


@pg_only("a turn paused on one node goes on on another")
class ApprovalNodesTest(MockChatTestCase):
    mock_env = {"WORKFORCE_TEST_LLM": "provider"}

    @classmethod
    def setUpServer(cls):
        cls.org = "aprn-" + uuid.uuid4().hex[:6]
        cls.key = cls.server.create_key(cls.org, mode="test")
        cls.decider = cls.server.create_key(cls.org, mode="test", scopes="approvals")

    def tearDown(self):
        self.server.pin = None

    def test_paused_on_one_node_goes_on_on_another(self):
        self.assertGreater(self.server.nodes, 1)
        emp = self.new_employee(self.key, name="Nodes", role="Helper",
                                category="operations")["id"]
        self.server.patch("/v1/employees/" + emp,
                          {"tools": [{"name": "tasks.create", "policy": "approve"}]},
                          key=self.key)
        msg = uniq("Nodes ") + script({"calls": [call("tasks__create", title="two nodes")]},
                                      {"say": "Done on the other node."})
        self.server.pin = 0
        m = self.assertJson(self.chat(self.key, emp, msg), 200)
        self.assertEqual(m["status"], "requires_approval")
        self.server.kill_node(0)
        self.server.pin = 1
        r = self.server.post("/v1/approvals/%s/approve" % m["tool_calls"][0]["approval_id"], {},
                             key=self.decider)
        self.assertEqual(r.status, 200, r)
        done = turn_end(self, self.key, m)
        self.assertEqual(done["content"], "Done on the other node.")
        self.server.start_node(0)
