# SPDX-License-Identifier: MIT
"""Workflows (issue 10, contract §12): create with every trigger, the record and its canonical
definition, every bad input with its exact `param` (and nothing created), the list and its
`before` cursor, GET, PATCH (fields, a new definition checked whole, enabled), DELETE,
rotate_webhook, the `workflows` scope, tiers, and isolation between organizations and modes."""

import re
import uuid

from chatlib import ChatTestCase, uniq
from harness import TS_RE, next_millisecond

WF_ID_RE = r"^wf_[A-Za-z0-9]{20,}$"
WF_FIELDS = {"id", "name", "description", "trigger", "steps", "enabled", "run_count",
             "last_run_at", "created_at", "updated_at"}
NO_WF = "wf_" + "Z" * 24
NO_EMP = "emp_" + "Z" * 24


class WorkflowCase(ChatTestCase):

    @classmethod
    def setUpServer(cls):
        cls.org = uniq("wf")
        cls.key = cls.server.create_key(cls.org, tier="agency")

    def emp(self, tier="starter", index=0, key=None):
        return self.employee(key or self.key, tier, index)

    def step(self, **kw):
        s = {"employee_id": kw.pop("employee_id", None) or self.emp(), "action": "respond",
             "input": "{{trigger.text}}"}
        s.update(kw)
        return s

    def body(self, **kw):
        b = {"name": kw.pop("name", "Flow " + uuid.uuid4().hex[:6]),
             "trigger": {"type": "manual"}, "steps": [self.step()]}
        b.update(kw)
        return b

    def create(self, key=None, **kw):
        return self.assertJson(self.server.post("/v1/workflows", self.body(**kw),
                                                key=key or self.key))

    def count(self, key=None):
        n, before = 0, None
        while True:
            path = "/v1/workflows?limit=100" + ("&before=" + before if before else "")
            b = self.assertJson(self.server.get(path, key=key or self.key))
            n += len(b["workflows"])
            if not b["has_more"]:
                return n
            before = b["next_cursor"]

    def bad(self, body, param, code="invalid_request", status=400, key=None):
        """A create that must fail with 'param' and create nothing."""
        before = self.count(key)
        r = self.server.post("/v1/workflows", body, key=key or self.key)
        self.assertError(r, status, code, param)
        self.assertEqual(self.count(key), before, "a failed create left a workflow")
        return r


class WorkflowCreateTest(WorkflowCase):

    def test_record(self):
        e = self.emp()
        body = self.body(description="Answers questions",
                         steps=[self.step(employee_id=e),
                                self.step(employee_id=e, action="summarize",
                                          input="{{steps[0].output}}",
                                          condition="{{ trigger.long == true }}",
                                          options={"max_sentences": 2})])
        wf = self.create(**{k: v for k, v in body.items()})
        self.assertEqual(set(wf.keys()), WF_FIELDS, wf)
        self.assertRegex(wf["id"], WF_ID_RE)
        self.assertEqual(wf["name"], body["name"])
        self.assertEqual(wf["description"], "Answers questions")
        self.assertEqual(wf["trigger"], {"type": "manual"})
        self.assertTrue(wf["enabled"])
        self.assertEqual(wf["run_count"], 0)
        self.assertIsNone(wf["last_run_at"])
        self.assertRegex(wf["created_at"], TS_RE)
        self.assertEqual(wf["created_at"], wf["updated_at"])
        # The canonical steps: condition null and options {} when absent.
        self.assertEqual(wf["steps"], [
            {"employee_id": e, "action": "respond", "input": "{{trigger.text}}",
             "condition": None, "options": {}},
            {"employee_id": e, "action": "summarize", "input": "{{steps[0].output}}",
             "condition": "{{ trigger.long == true }}", "options": {"max_sentences": 2}}])
        got = self.assertJson(self.server.get("/v1/workflows/" + wf["id"], key=self.key))
        self.assertEqual(got, wf)

    def test_every_action(self):
        steps = [
            self.step(action="respond"),
            self.step(action="summarize", options={"max_sentences": 20}),
            self.step(action="classify", options={"labels": [
                "billing", {"name": "bug", "description": "Something is broken"}]}),
            self.step(action="extract", options={"fields": {
                "email": "email", "amount": "number", "ok": "boolean", "when": "date",
                "site": "url", "phone": "phone", "name": "string"}}),
            self.step(action="draft_email", options={"to": "{{trigger.email}}",
                                                     "tone": "friendly"}),
            self.step(action="search_knowledge", options={"limit": 50, "tags": ["policy"]}),
            self.step(action="create_task", options={"title": "Follow up {{steps[0].output}}",
                                                     "priority": "high", "due_in_hours": 24}),
        ]
        wf = self.create(steps=steps)
        self.assertEqual([s["action"] for s in wf["steps"]],
                         ["respond", "summarize", "classify", "extract", "draft_email",
                          "search_knowledge", "create_task"])
        self.assertEqual(wf["steps"][6]["options"]["title"], "Follow up {{steps[0].output}}")

    def test_triggers(self):
        wf = self.create(trigger={"type": "webhook", "event": "order.created"})
        self.assertEqual(wf["trigger"], {"type": "webhook", "event": "order.created"})
        m = re.match(r"^%s/v1/hooks/([A-Za-z0-9]{32,})$" % re.escape(self.server.base_url),
                     wf["webhook_url"])
        self.assertIsNotNone(m, wf["webhook_url"])
        wf2 = self.create(trigger={"type": "webhook"})
        self.assertNotEqual(wf2["webhook_url"], wf["webhook_url"])
        wf = self.create(trigger={"type": "schedule",
                                  "recurring": {"frequency": "weekly", "day": "friday",
                                                "time": "09:30"}})
        self.assertEqual(wf["trigger"], {"type": "schedule", "recurring": {
            "frequency": "weekly", "day": "friday", "time": "09:30"}})
        self.assertNotIn("webhook_url", wf)
        wf = self.create(trigger={"type": "integration", "event": "github.issues.opened"})
        self.assertEqual(wf["trigger"], {"type": "integration", "event": "github.issues.opened"})
        wf = self.create(enabled=False)
        self.assertFalse(wf["enabled"])

    def test_twenty_steps(self):
        steps = [self.step(input="{{steps[%d].output}}" % (i - 1) if i else "{{trigger}}")
                 for i in range(20)]
        wf = self.create(steps=steps)
        self.assertEqual(len(wf["steps"]), 20)

    def test_offline_employee_accepted(self):
        emp = self.new_employee(self.key)
        self.assertJson(self.server.patch("/v1/employees/" + emp["id"], {"status": "offline"},
                                          key=self.key))
        wf = self.create(steps=[self.step(employee_id=emp["id"])])
        self.assertEqual(wf["steps"][0]["employee_id"], emp["id"])


class WorkflowBadInputTest(WorkflowCase):

    def test_top_level(self):
        self.bad({"trigger": {"type": "manual"}, "steps": [self.step()]}, "name")
        self.bad(self.body(name=""), "name")
        self.bad(self.body(name="   "), "name")
        self.bad(self.body(name="x" * 201), "name")
        self.bad(self.body(description=7), "description")
        self.bad(self.body(extra=1), "extra")
        self.bad(self.body(enabled="yes"), "enabled")
        b = self.body()
        del b["trigger"]
        self.bad(b, "trigger")
        b = self.body()
        del b["steps"]
        self.bad(b, "steps")

    def test_trigger(self):
        self.bad(self.body(trigger="manual"), "trigger")
        self.bad(self.body(trigger={}), "trigger.type")
        self.bad(self.body(trigger={"type": "cron"}), "trigger.type")
        self.bad(self.body(trigger={"type": "manual", "when": 1}), "trigger.when")
        self.bad(self.body(trigger={"type": "manual", "event": "x"}), "trigger.event")
        self.bad(self.body(trigger={"type": "webhook", "event": ""}), "trigger.event")
        self.bad(self.body(trigger={"type": "schedule"}), "trigger.recurring")
        self.bad(self.body(trigger={"type": "schedule", "recurring": {"frequency": "hourly",
                                                                      "time": "09:00"}}),
                 "trigger.recurring.frequency")
        self.bad(self.body(trigger={"type": "schedule", "recurring": {"frequency": "daily",
                                                                      "time": "25:00"}}),
                 "trigger.recurring.time")
        self.bad(self.body(trigger={"type": "manual", "recurring": {"frequency": "daily",
                                                                    "time": "09:00"}}),
                 "trigger.recurring")
        self.bad(self.body(trigger={"type": "integration"}), "trigger.event")
        self.bad(self.body(trigger={"type": "integration", "event": "jira.issue"}),
                 "trigger.event")

    def test_steps_shape(self):
        self.bad(self.body(steps=[]), "steps")
        self.bad(self.body(steps={}), "steps")
        self.bad(self.body(steps=[self.step() for _ in range(21)]), "steps")
        self.bad(self.body(steps=[self.step(), "respond"]), "steps[1]")
        for missing in ("employee_id", "action", "input"):
            s = self.step()
            del s[missing]
            self.bad(self.body(steps=[self.step(), s]), "steps[1].%s" % missing)
        self.bad(self.body(steps=[self.step(extra=1)]), "steps[0].extra")
        self.bad(self.body(steps=[self.step(input=5)]), "steps[0].input")
        self.bad(self.body(steps=[self.step(condition=True)]), "steps[0].condition")
        self.bad(self.body(steps=[self.step(action="dance")]), "steps[0].action")
        self.bad(self.body(steps=[self.step(action="slack.dance")]), "steps[0].action")
        # integration operations take their provider's options
        self.bad(self.body(steps=[self.step(action="slack.post_message")]),
                 "steps[0].options.channel")
        self.bad(self.body(steps=[self.step(action="github.create_issue",
                                            options={"repo": "a/b", "labels": ["x"]})]),
                 "steps[0].options.labels")
        self.bad(self.body(steps=[self.step(action="outlook.send_mail",
                                            options={"to": "{{trigger.to}}"})]),
                 "steps[0].options.subject")
        wf = self.create(steps=[self.step(action="slack.post_message",
                                          options={"channel": "{{trigger.channel}}"})])
        self.assertEqual(wf["steps"][0]["options"], {"channel": "{{trigger.channel}}"})

    def test_employees(self):
        self.bad(self.body(steps=[self.step(), self.step(employee_id=NO_EMP)]),
                 "steps[1].employee_id", code="employee_not_found", status=404)
        other = self.server.create_key(uniq("wf-other"), tier="agency")
        foreign = self.emp(key=other)
        self.bad(self.body(steps=[self.step(employee_id=foreign)]), "steps[0].employee_id",
                 code="employee_not_found", status=404)
        test_key = self.server.create_key(self.org, mode="test")
        self.bad(self.body(steps=[self.step(employee_id=self.emp(key=test_key))]),
                 "steps[0].employee_id", code="employee_not_found", status=404)
        starter = self.server.create_key(uniq("wf-starter"), tier="starter")
        self.bad(self.body(steps=[self.step(employee_id=self.emp("manager", key=starter))]),
                 "steps[0].employee_id", code="permission_denied", status=403, key=starter)

    def test_templates(self):
        cases = [
            ("{{trigger.x", "steps[0].input"),
            ("{{ }}", "steps[0].input"),
            ("{{secrets.key}}", "steps[0].input"),
            ("{{steps[0].output}}", "steps[0].input"),   # itself
            ("{{steps[1].output}}", "steps[0].input"),   # a later step
            ("{{steps[0]}}", "steps[1].input"),          # not .output
            ("{{workflow.name}}", "steps[0].input"),
        ]
        for tpl, param in cases:
            with self.subTest(tpl=tpl):
                steps = [self.step(), self.step()]
                steps[int(param[6])]["input"] = tpl
                self.bad(self.body(steps=steps), param)

    def test_conditions(self):
        for cond in ("trigger.x == 1", "{{ trigger.x == }}", "{{ 'a' < 1 }}", "{{ 1 == 'a' }}",
                     "{{ trigger.x == 1 == 2 }}", "{{ (trigger.x }}", "{{ steps[1].output }}",
                     "{{ trigger.x }} trailing", "{{ run.name }}"):
            with self.subTest(cond=cond):
                self.bad(self.body(steps=[self.step(), self.step(condition=cond)]),
                         "steps[1].condition")

    def test_options(self):
        cases = [
            ("respond", {"x": 1}, "steps[0].options.x"),
            ("respond", [], "steps[0].options"),
            ("summarize", {"max_sentences": 0}, "steps[0].options.max_sentences"),
            ("summarize", {"max_sentences": 21}, "steps[0].options.max_sentences"),
            ("summarize", {"max_sentences": "3"}, "steps[0].options.max_sentences"),
            ("classify", {}, "steps[0].options.labels"),
            ("classify", None, "steps[0].options.labels"),
            ("classify", {"labels": ["one"]}, "steps[0].options.labels"),
            ("classify", {"labels": ["a%d" % i for i in range(51)]}, "steps[0].options.labels"),
            ("classify", {"labels": ["a", 3]}, "steps[0].options.labels[1]"),
            ("classify", {"labels": ["a", "a"]}, "steps[0].options.labels[1]"),
            ("classify", {"labels": ["a", {"description": "d"}]},
             "steps[0].options.labels[1].name"),
            ("classify", {"labels": ["a", {"name": "b", "colour": "red"}]},
             "steps[0].options.labels[1].colour"),
            ("extract", {}, "steps[0].options.fields"),
            ("extract", {"fields": {}}, "steps[0].options.fields"),
            ("extract", {"fields": {"a": "money"}}, "steps[0].options.fields.a"),
            ("draft_email", {"to": ""}, "steps[0].options.to"),
            ("draft_email", {"to": "{{nope.x}}"}, "steps[0].options.to"),
            ("search_knowledge", {"limit": 51}, "steps[0].options.limit"),
            ("search_knowledge", {"tags": "policy"}, "steps[0].options.tags"),
            ("create_task", {"priority": "asap"}, "steps[0].options.priority"),
            ("create_task", {"due_in_hours": 0}, "steps[0].options.due_in_hours"),
            ("create_task", {"title": "x" * 201}, "steps[0].options.title"),
        ]
        for action, options, param in cases:
            with self.subTest(action=action, options=options):
                s = self.step(action=action)
                if options is not None:
                    s["options"] = options
                self.bad(self.body(steps=[s]), param)


class WorkflowListUpdateTest(WorkflowCase):

    def test_list_and_cursor(self):
        key = self.server.create_key(uniq("wf-list"), tier="agency")
        ids = []
        for i in range(5):
            next_millisecond()
            ids.append(self.create(key=key, steps=[self.step(employee_id=self.emp(key=key))])["id"])
        b = self.assertJson(self.server.get("/v1/workflows?limit=2", key=key))
        self.assertEqual(set(b.keys()), {"workflows", "has_more", "next_cursor"})
        self.assertEqual([w["id"] for w in b["workflows"]], ids[::-1][:2])
        self.assertTrue(b["has_more"])
        b2 = self.assertJson(self.server.get("/v1/workflows?limit=2&before=" + b["next_cursor"],
                                             key=key))
        self.assertEqual([w["id"] for w in b2["workflows"]], ids[::-1][2:4])
        b3 = self.assertJson(self.server.get("/v1/workflows?limit=2&before=" + b2["next_cursor"],
                                             key=key))
        self.assertEqual([w["id"] for w in b3["workflows"]], ids[:1])
        self.assertFalse(b3["has_more"])
        self.assertIsNone(b3["next_cursor"])
        self.assertError(self.server.get("/v1/workflows?limit=0", key=key), 400,
                         "invalid_request", "limit")
        self.assertError(self.server.get("/v1/workflows?limit=101", key=key), 400,
                         "invalid_request", "limit")
        self.assertError(self.server.get("/v1/workflows?before=junk", key=key), 400,
                         "invalid_request", "before")
        self.assertError(self.server.get("/v1/workflows?sort=name", key=key), 400,
                         "invalid_request", "sort")

    def test_patch(self):
        wf = self.create()
        next_millisecond()
        p = self.assertJson(self.server.patch("/v1/workflows/" + wf["id"],
                                              {"name": "Renamed", "enabled": False,
                                               "description": None}, key=self.key))
        self.assertEqual(p["name"], "Renamed")
        self.assertFalse(p["enabled"])
        self.assertIsNone(p["description"])
        self.assertEqual(p["steps"], wf["steps"])
        self.assertGreater(p["updated_at"], wf["updated_at"])
        self.assertEqual(p["created_at"], wf["created_at"])
        # A new definition is checked whole; a bad one changes nothing.
        before = self.assertJson(self.server.get("/v1/workflows/" + wf["id"], key=self.key))
        for body, param in (({"steps": []}, "steps"),
                            ({"steps": [self.step(input="{{steps[0].output}}")]},
                             "steps[0].input"),
                            ({"trigger": {"type": "schedule"}}, "trigger.recurring"),
                            ({"name": ""}, "name"),
                            ({"run_count": 5}, "run_count")):
            with self.subTest(body=body):
                self.assertError(self.server.patch("/v1/workflows/" + wf["id"], body,
                                                   key=self.key), 400, "invalid_request", param)
        self.assertEqual(self.assertJson(self.server.get("/v1/workflows/" + wf["id"],
                                                         key=self.key)), before)
        p = self.assertJson(self.server.patch(
            "/v1/workflows/" + wf["id"],
            {"steps": [self.step(), self.step(action="classify", input="{{steps[0].output}}",
                                              options={"labels": ["yes", "no"]})]},
            key=self.key))
        self.assertEqual(len(p["steps"]), 2)
        self.assertEqual(p["steps"][1]["options"], {"labels": ["yes", "no"]})
        self.assertError(self.server.patch("/v1/workflows/" + NO_WF, {"name": "x"},
                                           key=self.key), 404, "workflow_not_found", "id")

    def test_webhook_lifecycle(self):
        wf = self.create()
        self.assertNotIn("webhook_url", wf)
        self.assertError(self.server.post("/v1/workflows/%s/rotate_webhook" % wf["id"], {},
                                          key=self.key), 400, "invalid_request", "id")
        p = self.assertJson(self.server.patch("/v1/workflows/" + wf["id"],
                                              {"trigger": {"type": "webhook"}}, key=self.key))
        url = p["webhook_url"]
        r = self.assertJson(self.server.post("/v1/workflows/%s/rotate_webhook" % wf["id"], {},
                                             key=self.key))
        self.assertNotEqual(r["webhook_url"], url)
        self.assertRegex(r["webhook_url"], r"/v1/hooks/[A-Za-z0-9]{32,}$")
        # A name change keeps the URL.
        p = self.assertJson(self.server.patch("/v1/workflows/" + wf["id"], {"name": "n"},
                                              key=self.key))
        self.assertEqual(p["webhook_url"], r["webhook_url"])
        self.assertError(self.server.post("/v1/workflows/%s/rotate_webhook" % wf["id"],
                                          {"x": 1}, key=self.key), 400, "invalid_request", "x")
        self.assertError(self.server.post("/v1/workflows/%s/rotate_webhook" % NO_WF, {},
                                          key=self.key), 404, "workflow_not_found", "id")

    def test_delete(self):
        wf = self.create()
        d = self.assertJson(self.server.request("DELETE", "/v1/workflows/" + wf["id"],
                                                key=self.key))
        self.assertEqual(d, {"id": wf["id"], "deleted": True})
        self.assertError(self.server.get("/v1/workflows/" + wf["id"], key=self.key), 404,
                         "workflow_not_found", "id")
        self.assertError(self.server.request("DELETE", "/v1/workflows/" + wf["id"],
                                             key=self.key), 404, "workflow_not_found", "id")


class WorkflowAccessTest(WorkflowCase):

    def test_scope(self):
        k = self.server.create_key(self.org, scopes="chat")
        self.assertError(self.server.get("/v1/workflows", key=k), 403, "permission_denied")
        self.assertError(self.server.post("/v1/workflows", self.body(), key=k), 403,
                         "permission_denied")
        k = self.server.create_key(self.org, scopes="workflows")
        self.assertJson(self.server.get("/v1/workflows", key=k))

    def test_isolation(self):
        wf = self.create()
        other = self.server.create_key(uniq("wf-iso"), tier="agency")
        test_key = self.server.create_key(self.org, mode="test")
        for k in (other, test_key):
            self.assertError(self.server.get("/v1/workflows/" + wf["id"], key=k), 404,
                             "workflow_not_found", "id")
            self.assertError(self.server.patch("/v1/workflows/" + wf["id"], {"name": "x"}, key=k),
                             404, "workflow_not_found", "id")
            self.assertError(self.server.request("DELETE", "/v1/workflows/" + wf["id"], key=k),
                             404, "workflow_not_found", "id")
            ids = [w["id"] for w in
                   self.assertJson(self.server.get("/v1/workflows", key=k))["workflows"]]
            self.assertNotIn(wf["id"], ids)
        self.assertJson(self.server.get("/v1/workflows/" + wf["id"], key=self.key))
