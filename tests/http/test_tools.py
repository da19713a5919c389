# SPDX-License-Identifier: MIT
"""The tools of an organization and an employee's tool rules (contract §19), black-box.

- GET /v1/tools lists the five built-in tools and the integration operations (the five of §13
  and a reading one per provider), each with a closed JSON Schema of its arguments and its
  effect; an integration tool is available only while its provider is connected. Scope `tools`
  or `employees:read`, either one; a key made with any one scope holds exactly that one.
- Every employee has rules; one made before rules existed, or without them, has the default
  (the knowledge search, `auto`). PATCH and POST take `tools`, checked whole (each error names
  `tools[i]...`), and a refused body changes nothing.
"""

import uuid

from harness import GENEROUS_LIMITS, ServerTestCase

DEFAULT = [{"name": "knowledge.search", "policy": "auto"}]


class ToolsTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    @classmethod
    def setUpServer(cls):
        cls.org = "tools-" + uuid.uuid4().hex[:6]
        cls.key = cls.server.create_key(cls.org, mode="test", credits=10)

    def employee(self):
        return self.server.get("/v1/employees?limit=1", key=self.key).json["employees"][0]["id"]

    def test_catalog(self):
        r = self.server.get("/v1/tools", key=self.key)
        self.assertEqual(r.status, 200, r)
        tools = {t["name"]: t for t in r.json["tools"]}
        for name in ("knowledge.search", "tasks.create", "tasks.get", "workflows.run",
                     "employees.ask"):
            self.assertEqual(tools[name]["source"], "builtin", name)
            self.assertTrue(tools[name]["available"], name)
        writes = {"slack.post_message", "github.create_issue", "google_calendar.create_event",
                  "outlook.send_mail", "hubspot.create_note"}
        reads = {"slack.list_channels", "github.list_issues", "google_calendar.list_events",
                 "outlook.list_messages", "hubspot.search_contacts"}
        for name in writes | reads:
            t = tools[name]
            self.assertEqual(t["source"], "integration", name)
            self.assertEqual(t["effect"], "write" if name in writes else "read", name)
            self.assertFalse(t["available"], "%s: not connected" % name)
        self.assertEqual(len(tools), 15)
        for t in tools.values():
            schema = t["input_schema"]
            self.assertEqual(schema["type"], "object", t["name"])
            self.assertIs(schema["additionalProperties"], False, t["name"])
            self.assertTrue(t["description"], t["name"])
        search = tools["knowledge.search"]["input_schema"]
        self.assertEqual(search["required"], ["query"])
        self.assertEqual(search["properties"]["limit"]["maximum"], 50)

    def test_scopes(self):
        srv = self.server
        for scopes, status in (("tools", 200), ("employees:read", 200), ("chat", 403),
                               ("approvals", 403)):
            with self.subTest(scopes=scopes):
                k = srv.create_key(self.org, mode="test", scopes=scopes)
                r = srv.get("/v1/tools", key=k)
                self.assertEqual(r.status, status, r)
                if status == 403:
                    msg = self.assertError(r, 403, "permission_denied")["message"]
                    self.assertIn("employees:read or tools", msg)
        # a key scoped to one of the later scopes alone reads no employee: `keys create` used to
        # write only the scopes up to `integrations` into the key, so a key made with
        # `--scopes webhooks` (or tools, approvals) had none, which is full access
        for scopes in ("webhooks", "tools", "approvals"):
            with self.subTest(alone=scopes):
                k = srv.create_key(self.org, mode="test", scopes=scopes)
                self.assertError(srv.get("/v1/employees", key=k), 403, "permission_denied")
                row = [x for x in srv.keys_list(self.org) if x["last4"] == k[-4:]][0]
                self.assertEqual(row["scopes"], scopes)

    def test_default_rules(self):
        srv = self.server
        r = srv.get("/v1/employees/" + self.employee(), key=self.key)
        self.assertEqual(r.json["tools"], DEFAULT)
        r = srv.post("/v1/employees", {"name": "Rae", "role": "Analyst", "category": "sales"},
                     key=self.key)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["tools"], DEFAULT)
        rules = [{"name": "slack.*", "policy": "approve"}, {"name": "*", "policy": "deny"}]
        r = srv.post("/v1/employees", {"name": "Sam", "role": "Ops", "category": "operations",
                                       "tools": rules}, key=self.key)
        self.assertEqual(r.json["tools"], rules)
        self.assertEqual(srv.get("/v1/employees/" + r.json["id"], key=self.key).json["tools"],
                         rules)

    def test_update_rules(self):
        srv, emp = self.server, self.employee()
        rules = [{"name": "knowledge.search", "policy": "auto"},
                 {"name": "slack.list_channels", "policy": "auto"},
                 {"name": "slack.*", "policy": "approve"},
                 {"name": "mcp.crm.*", "policy": "deny"}]
        r = srv.patch("/v1/employees/" + emp, {"tools": rules}, key=self.key)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["tools"], rules)
        # unknown tools are accepted when well formed (an MCP server may add them later)
        r = srv.patch("/v1/employees/" + emp, {"tools": rules + [
            {"name": "mcp.later.some-tool", "policy": "auto"}]}, key=self.key)
        self.assertEqual(r.status, 200, r)
        r = srv.patch("/v1/employees/" + emp, {"tools": rules}, key=self.key)
        refused = [
            ({"tools": {}}, "tools"),
            ({"tools": ["slack.*"]}, "tools[0]"),
            ({"tools": [{"name": "Slack.*", "policy": "auto"}]}, "tools[0].name"),
            ({"tools": [{"name": "a..b", "policy": "auto"}]}, "tools[0].name"),
            ({"tools": [{"name": "slack.*", "policy": "ask"}]}, "tools[0].policy"),
            ({"tools": [{"name": "slack.*"}]}, "tools[0].policy"),
            ({"tools": [{"name": "a", "policy": "auto", "note": "x"}]}, "tools[0].note"),
            ({"tools": [{"name": "a", "policy": "auto"}, {"name": "a", "policy": "deny"}]},
             "tools[1].name"),
            ({"tools": [{"name": "t%d" % i, "policy": "auto"} for i in range(65)]}, "tools"),
            ({"tools": [{"name": "a" * 201, "policy": "auto"}]}, "tools[0].name"),
        ]
        for body, param in refused:
            with self.subTest(param=param, body=str(body)[:60]):
                r = srv.patch("/v1/employees/" + emp, body, key=self.key)
                self.assertError(r, 400, "invalid_request", param)
        # nothing of a refused body was kept
        self.assertEqual(srv.get("/v1/employees/" + emp, key=self.key).json["tools"], rules)
        # an update without tools keeps them; an empty list offers nothing
        r = srv.patch("/v1/employees/" + emp, {"description": "x"}, key=self.key)
        self.assertEqual(r.json["tools"], rules)
        r = srv.patch("/v1/employees/" + emp, {"tools": []}, key=self.key)
        self.assertEqual(r.json["tools"], [])
        r = srv.patch("/v1/employees/" + emp, {"tools": DEFAULT}, key=self.key)
        self.assertEqual(r.json["tools"], DEFAULT)

    def test_other_mode_and_organization(self):
        srv = self.server
        emp = self.employee()
        srv.patch("/v1/employees/" + emp, {"tools": [{"name": "*", "policy": "deny"}]},
                  key=self.key)
        other = srv.create_key("tools-o-" + uuid.uuid4().hex[:6], mode="test")
        oemp = srv.get("/v1/employees?limit=1", key=other).json["employees"][0]["id"]
        self.assertEqual(srv.get("/v1/employees/" + oemp, key=other).json["tools"], DEFAULT)
        self.assertError(srv.patch("/v1/employees/" + emp, {"tools": []}, key=other), 404,
                         "employee_not_found", "id")
        srv.patch("/v1/employees/" + emp, {"tools": DEFAULT}, key=self.key)
