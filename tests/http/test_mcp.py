# SPDX-License-Identifier: MIT
"""The MCP server (contract §16, issue 14 item 4): POST /v1/mcp over the Streamable HTTP
transport. initialize with each protocol version and an unknown one, the MCP-Protocol-Version
header, notifications and responses (202), ping, tools/list filtered by the key's scopes, each
tool called (its structuredContent is the REST answer, its text item the same JSON), the tool
errors of the API behind a tool (404, 402, 403 scope, 429, arguments), the JSON-RPC errors
(-32700, -32600, -32601, -32602), GET 405 and 401. And the official @modelcontextprotocol/sdk
client against the server (tests/npm/mcp_sdk.mjs: once per `make test`, not in the ASan and
PostgreSQL runs)."""

import json
import os
import shutil
import subprocess
import unittest
import uuid

from chatlib import ChatTestCase
from harness import PG_URL, REPO_ROOT
from test_knowledge import multipart

PATH = "/v1/mcp"
VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]
NEWEST = VERSIONS[0]
ALL_TOOLS = {"list_employees", "ask_employee", "search_knowledge", "create_task", "get_task",
             "list_tasks", "run_workflow", "get_workflow_run"}
NO_TASK = "task_" + "Z" * 24


class McpCase(ChatTestCase):
    """Helpers: JSON-RPC over POST /v1/mcp, and tool results."""

    def rpc(self, key, method, params=None, id=1, headers=None, status=200):
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        r = self.server.post(PATH, msg, key=key, headers=headers, timeout=60)
        body = self.assertJson(r, status)
        self.assertEqual(body.get("jsonrpc"), "2.0", body)
        self.assertEqual(body.get("id"), id, body)
        return body

    def result(self, key, method, params=None, **kw):
        body = self.rpc(key, method, params, **kw)
        self.assertIn("result", body, body)
        self.assertNotIn("error", body, body)
        return body["result"]

    def rpc_error(self, key, raw, code, status, id=None, headers=None):
        """POST 'raw' (bytes, str or a JSON value) and check the JSON-RPC error answer."""
        if not isinstance(raw, (bytes, str)):
            raw = json.dumps(raw)
        r = self.server.request("POST", PATH, body=raw, key=key, headers=headers)
        body = self.assertJson(r, status)
        self.assertEqual(set(body), {"jsonrpc", "id", "error"}, body)
        self.assertEqual(body["jsonrpc"], "2.0")
        self.assertEqual(body["id"], id, body)
        self.assertEqual(body["error"]["code"], code, body)
        self.assertIsInstance(body["error"]["message"], str)
        self.assertTrue(body["error"]["message"])
        return body["error"]

    def call(self, key, name, arguments=None, id=7):
        params = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.result(key, "tools/call", params, id=id)

    def call_ok(self, key, name, arguments=None):
        res = self.call(key, name, arguments)
        self.assertIs(res.get("isError"), False, res)
        self.assertEqual(len(res["content"]), 1, res)
        self.assertEqual(res["content"][0]["type"], "text")
        sc = res["structuredContent"]
        self.assertEqual(json.loads(res["content"][0]["text"]), sc, "text is the same JSON")
        return sc

    def call_error(self, key, name, arguments, code, param=None, text_has=None):
        """A tool error: isError, one text item carrying our error body; returns the error."""
        res = self.call(key, name, arguments)
        self.assertIs(res.get("isError"), True, res)
        self.assertNotIn("structuredContent", res)
        self.assertEqual(len(res["content"]), 1, res)
        err = json.loads(res["content"][0]["text"])["error"]
        self.assertEqual(err["code"], code, err)
        self.assertEqual(err.get("param"), param, err)
        self.assertEqual(err["doc_url"], "%s/docs/errors/%s" % (self.server.base_url, code))
        if text_has:
            self.assertIn(text_has, err["message"])
        return err

    def tool_names(self, key):
        return {t["name"] for t in self.result(key, "tools/list")["tools"]}


class McpProtocolTest(McpCase):
    """Lifecycle, transport and JSON-RPC errors."""

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("mcp-proto", mode="test")

    def test_initialize_versions(self):
        for asked, answered in [(v, v) for v in VERSIONS] + [("2024-11-05", NEWEST),
                                                             ("2099-01-01", NEWEST)]:
            with self.subTest(asked=asked):
                res = self.result(self.key, "initialize", {
                    "protocolVersion": asked, "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}})
                self.assertEqual(res["protocolVersion"], answered)
                self.assertEqual(res["capabilities"], {"tools": {}})
                self.assertEqual(res["serverInfo"]["name"], "workforce")
                self.assertIsInstance(res["serverInfo"]["version"], str)
        err = self.rpc(self.key, "initialize", {"capabilities": {}})["error"]
        self.assertEqual(err["code"], -32602, err)
        self.assertIn("protocolVersion", err["message"])

    def test_protocol_version_header(self):
        for v in VERSIONS:
            with self.subTest(version=v):
                self.assertEqual(self.result(self.key, "ping",
                                             headers={"MCP-Protocol-Version": v}), {})
        for bad in ("2024-11-05", "banana", ""):
            with self.subTest(version=bad):
                err = self.rpc_error(self.key, {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                                     -32600, 400, headers={"MCP-Protocol-Version": bad})
                self.assertIn("MCP-Protocol-Version", err["message"])

    def test_notifications_and_responses_202(self):
        for msg in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 4}},
                    {"jsonrpc": "2.0", "id": 9, "result": {}},
                    {"jsonrpc": "2.0", "id": "x", "error": {"code": -1, "message": "no"}}):
            with self.subTest(msg=msg):
                r = self.server.post(PATH, msg, key=self.key)
                self.assertEqual(r.status, 202, r)
                self.assertEqual(r.body, b"")
                self.assertRequestId(r)

    def test_ping(self):
        body = self.rpc(self.key, "ping", id="p-1")
        self.assertEqual(body["result"], {})

    def test_get_and_delete_405(self):
        for method in ("GET", "DELETE"):
            with self.subTest(method=method):
                r = self.server.request(method, PATH, key=self.key,
                                        headers={"Accept": "text/event-stream"})
                self.assertError(r, 405, "method_not_allowed")
                self.assertEqual(r.header("Allow"), "POST")

    def test_401(self):
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        self.assertError(self.server.post(PATH, msg), 401, "missing_api_key")
        self.assertError(self.server.post(PATH, msg, key="svc_test_sk_" + "x" * 40), 401,
                         "invalid_api_key")

    def test_parse_error(self):
        for raw in (b"{", b"not json", b"", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2}"):
            with self.subTest(raw=raw):
                self.rpc_error(self.key, raw, -32700, 400)

    def test_invalid_request(self):
        cases = [
            ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),  # a batch
            ([], None),
            (5, None),
            ('"ping"', None),
            ({"id": 1, "method": "ping"}, 1),
            ({"jsonrpc": "1.0", "id": 2, "method": "ping"}, 2),
            ({"jsonrpc": "2.0", "id": 3}, 3),
            ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
            ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
            ({"jsonrpc": "2.0", "id": 4, "method": 12}, 4),
            ({"jsonrpc": "2.0", "id": 5, "method": ""}, 5),
            ({"jsonrpc": "2.0", "id": 6, "method": "ping", "params": [1]}, 6),
            ({"jsonrpc": "2.0", "id": 7, "result": {}, "error": {"code": 1, "message": "x"}}, 7),
        ]
        for msg, id in cases:
            with self.subTest(msg=msg):
                self.rpc_error(self.key, msg, -32600, 400, id=id)

    def test_method_not_found(self):
        for method in ("resources/list", "prompts/get", "tools/delete"):
            with self.subTest(method=method):
                err = self.rpc(self.key, method, {}, id="m")["error"]
                self.assertEqual(err["code"], -32601, err)
                self.assertIn(method, err["message"])

    def test_invalid_params(self):
        cases = [({"name": "no_such_tool"}, "no_such_tool"),
                 ({}, "name"),
                 ({"name": 5}, "name"),
                 ({"name": "get_task", "arguments": [NO_TASK]}, "arguments"),
                 ({"name": "get_task", "arguments": "task"}, "arguments")]
        for params, named in cases:
            with self.subTest(params=params):
                err = self.rpc(self.key, "tools/call", params)["error"]
                self.assertEqual(err["code"], -32602, err)
                self.assertIn(named, err["message"])

    def test_content_type(self):
        r = self.server.request("POST", PATH, body="{}", key=self.key, content_type="text/plain")
        self.assertError(r, 415, "unsupported_media_type")


class McpToolsTest(McpCase):
    """Each tool, its scope and its errors."""

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.org = "mcp-" + uuid.uuid4().hex[:8]
        cls.live = s.create_key(cls.org, tier="agency", credits=100000)
        cls.reader = s.create_key(cls.org, scopes="employees:read")
        cls.tasker = s.create_key(cls.org, scopes="tasks,knowledge")
        cls.zero = s.create_key("mcp-zero-" + uuid.uuid4().hex[:8], credits=0)

    def emp(self, key=None):
        return self.employee(key or self.live)

    def test_tools_list(self):
        tools = self.result(self.live, "tools/list")["tools"]
        self.assertEqual({t["name"] for t in tools}, ALL_TOOLS)
        by = {t["name"]: t for t in tools}
        for t in tools:
            self.assertEqual(t["inputSchema"]["type"], "object", t)
            self.assertIs(t["inputSchema"]["additionalProperties"], False, t)
            self.assertEqual(t["outputSchema"]["type"], "object", t)
            self.assertTrue(t["description"])
            for req in t["inputSchema"]["required"]:
                self.assertIn(req, t["inputSchema"]["properties"])
        self.assertEqual(set(by["ask_employee"]["inputSchema"]["required"]),
                         {"employee_id", "message"})
        self.assertEqual(set(by["create_task"]["inputSchema"]["required"]),
                         {"employee_id", "title"})
        self.assertEqual(by["get_task"]["inputSchema"]["required"], ["task_id"])
        self.assertEqual(set(by["get_workflow_run"]["inputSchema"]["required"]),
                         {"workflow_id", "run_id"})
        self.assertEqual(by["search_knowledge"]["inputSchema"]["required"], ["query"])
        props = by["create_task"]["inputSchema"]["properties"]
        self.assertEqual(set(props["priority"]["enum"]), {"low", "medium", "high", "urgent"})
        self.assertEqual(by["list_tasks"]["inputSchema"]["properties"]["limit"]["type"],
                         "integer")

    def test_tools_list_by_scope(self):
        self.assertEqual(self.tool_names(self.reader), {"list_employees"})
        self.assertEqual(self.tool_names(self.tasker),
                         {"create_task", "get_task", "list_tasks", "search_knowledge"})

    def test_scope_error(self):
        # A tool outside the key's scopes is a tool error naming the scope, not a failure.
        self.call_error(self.reader, "create_task", {"employee_id": self.emp(), "title": "x"},
                        "permission_denied", text_has="tasks")
        self.call_error(self.reader, "ask_employee", {"employee_id": self.emp(), "message": "x"},
                        "permission_denied", text_has="chat")
        self.call_error(self.tasker, "list_employees", {}, "permission_denied",
                        text_has="employees:read")
        # nothing was created by the refused call
        tasks = self.call_ok(self.live, "list_tasks", {"limit": 100})["tasks"]
        self.assertNotIn("x", [t["title"] for t in tasks])

    def test_list_employees(self):
        rest = self.assertJson(self.server.get("/v1/employees?limit=3&category=sales",
                                               key=self.live))
        sc = self.call_ok(self.live, "list_employees", {"limit": 3, "category": "sales"})
        self.assertEqual(sc, rest)
        self.assertTrue(all(e["category"] == "sales" for e in sc["employees"]))
        self.call_error(self.live, "list_employees", {"category": "nope"}, "invalid_request",
                        param="category")

    def test_ask_employee(self):
        emp = self.emp()
        b0 = self.balance(self.live)
        m = self.call_ok(self.live, "ask_employee",
                         {"employee_id": emp, "message": "What can you do? mcp-ask",
                          "context": {"customer": "Acme"}})
        self.checkMessage(m, emp)
        self.assertGreaterEqual(m["credits_used"], 1)
        self.assertEqual(self.balance(self.live), b0 - m["credits_used"], "charged as chat")
        conv = self.conversation(self.live, m["conversation_id"])
        self.assertEqual([x["role"] for x in conv["messages"]], ["user", "assistant"])
        self.assertEqual(conv["messages"][1]["id"], m["id"])
        m2 = self.call_ok(self.live, "ask_employee",
                          {"employee_id": emp, "message": "And then?",
                           "conversation_id": m["conversation_id"]})
        self.assertEqual(m2["conversation_id"], m["conversation_id"])
        self.assertEqual(len(self.conversation(self.live, m["conversation_id"])["messages"]), 4)

    def test_ask_employee_errors(self):
        self.call_error(self.live, "ask_employee", {"employee_id": "emp_" + "Z" * 24,
                                                    "message": "hi"},
                        "employee_not_found", param="employee_id")
        zemp = self.emp(self.zero)
        self.call_error(self.zero, "ask_employee", {"employee_id": zemp, "message": "hi"},
                        "insufficient_credits")
        self.call_error(self.live, "ask_employee", {"employee_id": self.emp(), "message": ""},
                        "invalid_request", param="message")
        self.call_error(self.live, "ask_employee", {"employee_id": self.emp(), "message": "x",
                                                    "stream": True},
                        "invalid_request", param="stream")

    def test_search_knowledge(self):
        word = "zq" + "".join(chr(ord("a") + int(c, 16) % 26) for c in uuid.uuid4().hex[:10])
        body, ctype = multipart([("tags", "mcp")], [("file", "mcp.txt", "text/plain",
                                                     ("The %s policy is generous." % word)
                                                     .encode())])
        doc = self.assertJson(self.server.request("POST", "/v1/knowledge/documents", body=body,
                                                  key=self.live, content_type=ctype))
        self.poll(lambda: self.assertJson(self.server.get("/v1/knowledge/documents/" + doc["id"],
                                                          key=self.live))["status"] == "ready",
                  "document ready", timeout=60)
        sc = self.call_ok(self.live, "search_knowledge",
                          {"query": word + " policy", "limit": 3, "tags": ["mcp"]})
        self.assertEqual(sc["query"], word + " policy")
        self.assertEqual(sc["results"][0]["document_id"], doc["id"], sc)
        rest = self.assertJson(self.server.post("/v1/knowledge/query",
                                                {"query": word + " policy", "limit": 3,
                                                 "filters": {"tags": ["mcp"]}}, key=self.live))
        self.assertEqual([x["chunk_id"] for x in sc["results"]],
                         [x["chunk_id"] for x in rest["results"]])
        sc = self.call_ok(self.live, "search_knowledge", {"query": word, "tags": ["other"]})
        self.assertEqual(sc["results"], [])
        self.call_error(self.live, "search_knowledge", {"query": word, "tags": "mcp"},
                        "invalid_request", param="tags")
        self.call_error(self.live, "search_knowledge",
                        {"query": word, "employee_id": "emp_" + "Z" * 24},
                        "employee_not_found", param="employee_id")
        self.call_error(self.live, "search_knowledge", {"query": word, "limit": 51},
                        "invalid_request", param="limit")

    def test_tasks(self):
        emp = self.emp()
        t = self.call_ok(self.tasker, "create_task",
                         {"employee_id": emp, "title": "MCP task", "description": "From MCP",
                          "priority": "high", "due_at": "2030-01-02T03:04:05Z"})
        self.assertRegex(t["id"], r"^task_")
        self.assertEqual((t["employee_id"], t["title"], t["priority"]), (emp, "MCP task", "high"))
        self.assertEqual(t["due_at"], "2030-01-02T03:04:05.000Z")
        got = self.call_ok(self.tasker, "get_task", {"task_id": t["id"]})
        self.assertEqual(got["id"], t["id"])
        rest = self.assertJson(self.server.get("/v1/tasks/" + t["id"], key=self.live))
        self.assertEqual(set(got), set(rest))
        listed = self.call_ok(self.tasker, "list_tasks", {"employee_id": emp, "limit": 50})
        self.assertIn(t["id"], [x["id"] for x in listed["tasks"]])
        self.assertIn("next_cursor", listed)
        self.poll(lambda: t["id"] in [x["id"] for x in self.call_ok(
            self.tasker, "list_tasks", {"status": "completed", "employee_id": emp})["tasks"]],
            "the task listed as completed", timeout=60)
        self.assertEqual(self.call_ok(self.tasker, "get_task", {"task_id": t["id"]})["status"],
                         "completed")

    def test_task_errors(self):
        self.call_error(self.tasker, "get_task", {"task_id": NO_TASK}, "task_not_found",
                        param="task_id")
        self.call_error(self.tasker, "get_task", {}, "invalid_request", param="task_id")
        self.call_error(self.tasker, "get_task", {"task_id": 5}, "invalid_request",
                        param="task_id")
        self.call_error(self.tasker, "get_task", {"task_id": NO_TASK, "x": 1}, "invalid_request",
                        param="x")
        self.call_error(self.tasker, "create_task", {"employee_id": self.emp(), "title": 5},
                        "invalid_request", param="title")
        self.call_error(self.tasker, "create_task", {"title": "t"}, "invalid_request",
                        param="employee_id")
        self.call_error(self.tasker, "create_task", {"employee_id": self.emp(), "title": "t",
                                                     "priority": "asap"},
                        "invalid_request", param="priority")
        self.call_error(self.tasker, "list_tasks", {"status": "sleeping"}, "invalid_request",
                        param="status")
        self.call_error(self.tasker, "list_tasks", {"limit": "ten"}, "invalid_request",
                        param="limit")
        self.call_error(self.tasker, "list_tasks", {"limit": 0}, "invalid_request",
                        param="limit")

    def test_workflows(self):
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "MCP flow", "trigger": {"type": "manual"},
            "steps": [{"employee_id": self.emp(), "action": "respond",
                       "input": "{{trigger.text}}"}]}, key=self.live))
        dry = self.call_ok(self.live, "run_workflow",
                           {"workflow_id": wf["id"], "input": {"text": "hello"}, "dry_run": True})
        self.assertIs(dry["dry_run"], True)
        self.assertEqual(dry["steps"][0]["input"], "hello")
        run = self.call_ok(self.live, "run_workflow",
                           {"workflow_id": wf["id"], "input": {"text": "Say hi from MCP"}})
        self.assertRegex(run["id"], r"^run_")
        self.assertEqual(run["workflow_id"], wf["id"])
        self.assertEqual(run["trigger"]["data"], {"text": "Say hi from MCP"})
        done = self.poll(lambda: (lambda x: x if x["status"] in ("completed", "failed") else None)(
            self.call_ok(self.live, "get_workflow_run",
                         {"workflow_id": wf["id"], "run_id": run["id"]})),
            "the run ended", timeout=60)
        self.assertEqual(done["status"], "completed", done)
        rest = self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf["id"], run["id"]),
                                               key=self.live))
        self.assertEqual(done, rest)
        self.call_error(self.live, "get_workflow_run",
                        {"workflow_id": wf["id"], "run_id": "run_" + "Z" * 24}, "run_not_found",
                        param="run_id")
        self.call_error(self.live, "run_workflow", {"workflow_id": "wf_" + "Z" * 24},
                        "workflow_not_found", param="workflow_id")
        self.call_error(self.live, "run_workflow", {"workflow_id": wf["id"], "input": "text"},
                        "invalid_request", param="input")

    def test_run_workflow_without_credits(self):
        emp = self.emp(self.zero)
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "Zero flow", "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp, "action": "respond", "input": "x"}]}, key=self.zero))
        self.call_error(self.zero, "run_workflow", {"workflow_id": wf["id"]},
                        "insufficient_credits")


class McpRateLimitTest(McpCase):
    """Over the limits a tool call is a tool error (rate_limit_exceeded, Retry-After set);
    any other method is answered 429 as a REST call would be (burst 3, refilled once every
    20 s)."""

    server_env = {"WORKFORCE_RATE_LIMITS": "starter:3/3/5,manager:3/3/5,agency:3/3/5"}

    @classmethod
    def setUpServer(cls):
        cls.key = cls.server.create_key("mcp-rl", mode="test")

    def test_429(self):
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "get_task", "arguments": {"task_id": NO_TASK}}}
        for _ in range(8):
            r = self.server.post(PATH, msg, key=self.key)
            body = self.assertJson(r, 200)
            err = json.loads(body["result"]["content"][0]["text"])["error"]
            if err["code"] != "task_not_found":
                break
        self.assertEqual(err["code"], "rate_limit_exceeded", body)
        self.assertIs(body["result"]["isError"], True)
        self.assertRegex(r.header("Retry-After", ""), r"^[1-9][0-9]*$")
        r = self.server.post(PATH, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                             key=self.key)
        self.assertError(r, 429, "rate_limit_exceeded")


NODE = shutil.which("node")
SDK_DIR = os.path.join(REPO_ROOT, "node_modules", "@modelcontextprotocol", "sdk")
SDK_SKIP = ("the SDK test runs once per make test (plain SQLite run)"
            if os.environ.get("WORKFORCE_BIN") or PG_URL else
            "node is not installed" if not NODE else
            "node_modules/@modelcontextprotocol/sdk is missing (npm ci)"
            if not os.path.isdir(SDK_DIR) else None)


class McpSDKTest(McpCase):
    """The official @modelcontextprotocol/sdk client (pinned in package.json) over its
    StreamableHTTPClientTransport with an Authorization header."""

    @classmethod
    def setUpClass(cls):
        if SDK_SKIP:
            raise unittest.SkipTest(SDK_SKIP)
        super().setUpClass()

    @classmethod
    def setUpServer(cls):
        s = cls.server
        org = "mcp-sdk"
        cls.live = s.create_key(org, credits=100000)
        cls.reader = s.create_key(org, scopes="employees:read")
        wf = s.post("/v1/workflows", {
            "name": "SDK flow", "trigger": {"type": "manual"},
            "steps": [{"employee_id": s.get("/v1/employees?limit=1", key=cls.live)
                       .json["employees"][0]["id"], "action": "respond",
                       "input": "{{trigger.text}}"}]}, key=cls.live)
        cls.workflow = wf.json["id"]

    def test_official_sdk(self):
        env = dict(os.environ, WORKFORCE_MCP_URL=self.server.base_url + PATH,
                   WORKFORCE_MCP_KEY=self.live, WORKFORCE_MCP_READER_KEY=self.reader,
                   WORKFORCE_MCP_WORKFLOW=self.workflow)
        p = subprocess.run([NODE, os.path.join(REPO_ROOT, "tests", "npm", "mcp_sdk.mjs")],
                           capture_output=True, text=True, timeout=90, env=env, cwd=REPO_ROOT,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, "mcp_sdk.mjs failed:\n%s\n%s" % (p.stdout, p.stderr))
        self.assertIn("ok - all", p.stdout, p.stdout)
