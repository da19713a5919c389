# SPDX-License-Identifier: MIT
"""Integration operations (issue 11, contract §12-13): workflow steps acting through a
connection, against tests/mock/provider_mock.py, a strict stand-in for the five providers'
OAuth servers and APIs. Each operation sends the provider's documented request with the
stored token and maps the answer to {id, url}; a provider's refusal is the step's error with
its reason; a busy provider is tried again; not connected fails with
integration_not_connected; a token about to expire is refreshed first, once for concurrent
steps, and a refused refresh marks the connection reauthorization_required."""

import json
import os
import sys
import time
import uuid

from chatlib import ChatTestCase
from harness import GENEROUS_LIMITS, Server, free_port
from oauthlib import browser_connect

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mock"))
import provider_mock  # noqa: E402

ENDED = ("completed", "failed", "cancelled")


class IntegrationOpsTest(ChatTestCase):

    @classmethod
    def setUpClass(cls):
        cls.mock = provider_mock.ProviderMock().start()
        port = free_port()
        cls.base = "http://127.0.0.1:%d" % port
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_PUBLIC_URL": cls.base,
               "WORKFORCE_TASK_WORKERS": "4"}
        env.update(cls.mock.env_for())
        cls.server = Server(env=env)
        try:
            cls.server.start(port=port)
            cls.setUpServer()
        except BaseException:
            cls.server.cleanup()
            cls.mock.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.mock.stop()

    def setUp(self):
        self.mock_control("reset", {})

    # ---- helpers ----

    def mock_control(self, name, body):
        import urllib.request
        req = urllib.request.Request(self.mock.base_url + "/__control/" + name,
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def mock_requests(self, prefix):
        import urllib.request
        with urllib.request.urlopen(self.mock.base_url + "/__requests?prefix=" + prefix,
                                    timeout=10) as r:
            doc = json.loads(r.read())
        return doc["requests"] if isinstance(doc, dict) else doc

    def org(self, mode="test"):
        return self.server.create_key("op-" + uuid.uuid4().hex[:8], mode=mode, credits=100000)

    def connect(self, key, provider):
        c = self.assertJson(self.server.post("/v1/integrations/%s/connect" % provider, {},
                                             key=key))
        # the user's browser, from this server's start page through the provider back to the
        # callback with its cookies (the flow is bound to the browser that opened it)
        r = browser_connect(self.server, self.base, c["authorization_url"], provider)
        self.assertEqual(r.status, 200, r)
        b = self.assertJson(self.server.get("/v1/integrations", key=key))
        i = {x["provider"]: x for x in b["integrations"]}[provider]
        self.assertEqual(i["status"], "connected", i)
        return i

    def run_one(self, key, action, options, input_text, trigger=None):
        emp = self.employee(key, "starter", 0)
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "Op " + action, "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp, "action": action, "input": input_text,
                       "options": options}]}, key=key))
        run = self.assertJson(self.server.post("/v1/workflows/%s/run" % wf["id"],
                                               {"input": trigger or {}}, key=key))
        return self.wait_run(key, wf["id"], run["id"])

    def wait_run(self, key, wf_id, run_id, timeout=30):
        path = "/v1/workflows/%s/runs/%s" % (wf_id, run_id)
        return self.poll(lambda: (lambda r: r if r["status"] in ENDED else None)(
            self.assertJson(self.server.get(path, key=key))), "the run ends", timeout=timeout)

    # ---- every operation ----

    def test_slack_post_message(self):
        key = self.org()
        i = self.connect(key, "slack")
        self.assertEqual(i["account"], "Mock Workspace", "Slack's team name")
        run = self.run_one(key, "slack.post_message", {"channel": "{{trigger.channel}}"},
                           "Deploy done: {{trigger.what}}",
                           {"channel": "#general", "what": "v2"})
        self.assertEqual(run["status"], "completed", run)
        out = run["steps"][0]["output"]
        self.assertEqual(out, {"id": "1700000000.000001", "url": None})
        [req] = [r for r in self.mock_requests("/slack/api/chat.postMessage")]
        self.assertEqual(req["method"], "POST")
        self.assertEqual(req["body"], {"channel": "#general", "text": "Deploy done: v2"})
        self.assertTrue(req["headers"]["authorization"].startswith("Bearer xoxb-mock-"))
        self.assertTrue(req["headers"]["content-type"].startswith("application/json"))
        # the provider's reason becomes the step's error; nothing is retried
        run = self.run_one(key, "slack.post_message", {"channel": "#nowhere"}, "x")
        self.assertEqual(run["status"], "failed")
        self.assertIn("channel_not_found", run["steps"][0]["error"])
        self.assertEqual(run["steps"][0]["attempts"], 1)

    def test_github_create_issue(self):
        key = self.org()
        self.connect(key, "github")
        run = self.run_one(key, "github.create_issue", {"repo": "acme/widgets"},
                           "Crash on start\nSteps: open the app.\nSeen on v2.")
        self.assertEqual(run["status"], "completed", run)
        out = run["steps"][0]["output"]
        self.assertEqual(out["id"], "9000001")
        self.assertTrue(out["url"].endswith("/acme/widgets/issues/1"), out)
        [req] = self.mock_requests("/github/repos/acme/widgets/issues")
        self.assertEqual(req["body"], {"title": "Crash on start",
                                       "body": "Steps: open the app.\nSeen on v2."})
        h = req["headers"]
        self.assertEqual(h["accept"], "application/vnd.github+json")
        self.assertEqual(h["x-github-api-version"], "2022-11-28")
        self.assertTrue(h.get("user-agent"))
        for repo, why in (("acme/locked", "403"), ("acme/nope", "404"), ("nope", "owner/name")):
            with self.subTest(repo=repo):
                run = self.run_one(key, "github.create_issue", {"repo": repo}, "Title")
                self.assertEqual(run["status"], "failed")
                self.assertIn(why, run["steps"][0]["error"])

    def test_path_parts_are_checked(self):
        """Issue 26 finding 7: a repository or calendar id from the options (a template's
        value included) becomes a segment of the provider's URL only when it is one: "../user"
        once sent the organization's token to POST /user/issues. Refused with the step's
        error, nothing sent."""
        key = self.org()
        self.connect(key, "github")
        self.connect(key, "google_calendar")
        for repo in ("../user", "acme/..", "acme/.", "./x", "acme/../../user", "..%2fuser/x",
                     "acme/wid gets", "acme/widgets?x=1", "acme\\x/y", "ab/"):
            with self.subTest(repo=repo):
                run = self.run_one(key, "github.create_issue", {"repo": repo}, "Title")
                self.assertEqual(run["status"], "failed", run)
                self.assertIn("options.repo must be owner/name", run["steps"][0]["error"])
                self.assertEqual(run["steps"][0]["attempts"], 1)
        run = self.run_one(key, "github.create_issue", {"repo": "{{trigger.repo}}"}, "Title",
                           {"repo": "../user"})
        self.assertEqual(run["status"], "failed", run)
        self.assertIn("options.repo must be owner/name", run["steps"][0]["error"])
        event = {"summary": "S", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T11:00:00Z"}
        for cal in ("..", "."):
            with self.subTest(calendar_id=cal):
                run = self.run_one(key, "google_calendar.create_event", {"calendar_id": cal},
                                   "{{trigger}}", event)
                self.assertEqual(run["status"], "failed", run)
                self.assertIn("options.calendar_id", run["steps"][0]["error"])
        sent = [r["method"] + " " + r["path"] for r in self.mock_requests("/")
                if "issues" in r["path"] or "/calendar/" in r["path"]]
        self.assertEqual(sent, [], "nothing was sent to a provider's API")
        # names with dots, dashes and underscores are repositories
        run = self.run_one(key, "github.create_issue", {"repo": "acme/widgets"}, "Title")
        self.assertEqual(run["status"], "completed", run)

    def test_google_calendar_create_event(self):
        key = self.org()
        self.connect(key, "google_calendar")
        event = {"summary": "Review", "start": "2026-12-01T10:00:00+01:00",
                 "end": "2026-12-01T11:00:00+01:00", "description": "Quarterly"}
        run = self.run_one(key, "google_calendar.create_event", {}, "{{trigger}}", event)
        self.assertEqual(run["status"], "completed", run)
        out = run["steps"][0]["output"]
        self.assertEqual(out["id"], "mockev0001")
        self.assertTrue(out["url"])
        [req] = self.mock_requests("/google/calendar/v3/calendars/primary/events")
        self.assertEqual(req["body"], {"summary": "Review", "description": "Quarterly",
                                       "start": {"dateTime": event["start"]},
                                       "end": {"dateTime": event["end"]}})
        run = self.run_one(key, "google_calendar.create_event", {}, "not json")
        self.assertEqual(run["status"], "failed")
        self.assertIn("summary, start, end", run["steps"][0]["error"])

    def test_outlook_send_mail(self):
        key = self.org()
        self.connect(key, "outlook")
        run = self.run_one(key, "outlook.send_mail",
                           {"to": "{{trigger.to}}", "subject": "Hello {{trigger.name}}"},
                           "Your order shipped.", {"to": "ana@example.com", "name": "Ana"})
        self.assertEqual(run["status"], "completed", run)
        out = run["steps"][0]["output"]
        self.assertRegex(out["id"], r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                    r"[0-9a-f]{12}$")
        self.assertIsNone(out["url"])
        [req] = self.mock_requests("/graph/v1.0/me/sendMail")
        self.assertEqual(req["headers"]["client-request-id"], out["id"])
        self.assertEqual(req["body"], {"message": {
            "subject": "Hello Ana", "body": {"contentType": "Text",
                                             "content": "Your order shipped."},
            "toRecipients": [{"emailAddress": {"address": "ana@example.com"}}]},
            "saveToSentItems": True})

    def test_hubspot_create_note(self):
        key = self.org()
        self.connect(key, "hubspot")
        run = self.run_one(key, "hubspot.create_note", {"contact_email": "jane@example.com"},
                           "Called about the renewal.")
        self.assertEqual(run["status"], "completed", run)
        self.assertEqual(run["steps"][0]["output"], {"id": "50001", "url": None})
        [req] = self.mock_requests("/hubspot/crm/v3/objects/notes")
        self.assertEqual(req["body"]["properties"]["hs_note_body"], "Called about the renewal.")
        self.assertEqual(req["body"]["associations"][0]["to"], {"id": "1001"})
        run = self.run_one(key, "hubspot.create_note", {"contact_email": "nobody@example.com"},
                           "x")
        self.assertEqual(run["status"], "failed")
        self.assertIn("no contact", run["steps"][0]["error"])
        # without a contact: a note of its own
        run = self.run_one(key, "hubspot.create_note", {}, "General note")
        self.assertEqual(run["status"], "completed", run)

    def test_account_names(self):
        key = self.org()
        names = {"github": "mock-user", "google_calendar": "mock.user@example.com",
                 "outlook": "mock.user@contoso.example", "hubspot": "mock-portal.hubspot.com",
                 "slack": "Mock Workspace"}
        for provider, name in names.items():
            with self.subTest(provider=provider):
                self.assertEqual(self.connect(key, provider)["account"], name)
        # who the account is, like the tokens, is only in the sealed blob
        for root, _, files in os.walk(self.server.tmpdir):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    data = fh.read()
                for name in names.values():
                    self.assertNotIn(name.encode(), data, "%s names an account" % f)
        # the lookup failing costs the name, never the connection
        key = self.org()
        self.mock_control("fail", {"path_prefix": "/github/user", "mode": "500"})
        i = self.connect(key, "github")
        self.assertIsNone(i["account"])
        self.mock_control("fail", {"path_prefix": "/github/user", "mode": "off"})

    def test_disconnect_revokes_in_each_providers_way(self):
        key = self.org()
        for provider in ("github", "hubspot", "google_calendar", "slack", "outlook"):
            self.connect(key, provider)
        for provider in ("github", "hubspot", "google_calendar", "slack", "outlook"):
            d = self.assertJson(self.server.request("DELETE", "/v1/integrations/" + provider,
                                                    key=key))
            self.assertEqual(d["status"], "available")

        def revocations():
            got = {}
            for r in self.mock_requests("/"):
                path = r["path"]
                if path.startswith("/github/applications/"):
                    got["github"] = r
                elif path.startswith("/hubspot/oauth/v1/refresh-tokens/"):
                    got["hubspot"] = r
                elif path == "/google/revoke":
                    got["google_calendar"] = r
                elif path == "/slack/api/auth.revoke":
                    got["slack"] = r
            return got if len(got) == 4 else None
        got = self.poll(revocations, "the providers revoked the tokens", timeout=15)
        gh = got["github"]
        self.assertEqual((gh["method"], gh["path"]),
                         ("DELETE", "/github/applications/test-client-id/token"))
        self.assertTrue(gh["headers"]["authorization"].startswith("Basic "))
        self.assertTrue(gh["body"]["access_token"].startswith("gho_mock"), gh["body"])
        self.assertEqual(got["hubspot"]["method"], "DELETE")
        self.assertIn("na1-mock-refresh-", got["hubspot"]["path"])
        self.assertEqual(got["google_calendar"]["method"], "POST")
        self.assertIn("token", got["google_calendar"]["body"])
        # Outlook has no revocation endpoint: nothing was sent
        self.assertEqual([r for r in self.mock_requests("/microsoft") if "revoke" in r["path"]],
                         [])
        # the tokens are gone: operations now fail as not connected
        run = self.run_one(key, "github.create_issue", {"repo": "acme/widgets"}, "T")
        self.assertIn("integration_not_connected", run["steps"][0]["error"])

    # ---- failures ----

    def test_not_connected(self):
        key = self.org()
        run = self.run_one(key, "slack.post_message", {"channel": "#general"}, "x")
        self.assertEqual(run["status"], "failed")
        self.assertTrue(run["steps"][0]["error"].startswith("integration_not_connected"),
                        run["steps"][0]["error"])
        self.assertEqual(run["steps"][0]["attempts"], 1)
        self.assertEqual(self.mock_requests("/slack/api/chat.postMessage"), [])

    def test_busy_provider_is_tried_again(self):
        key = self.org()
        self.connect(key, "slack")
        self.mock_control("fail", {"path_prefix": "/slack/api/chat.postMessage", "mode": "503",
                                   "count": 1})
        run = self.run_one(key, "slack.post_message", {"channel": "#general"}, "x")
        self.assertEqual(run["status"], "completed", run)
        self.assertEqual(run["steps"][0]["attempts"], 2)

    def test_other_organization_cannot_use_a_connection(self):
        a, b = self.org(), self.org()
        self.connect(a, "slack")
        run = self.run_one(b, "slack.post_message", {"channel": "#general"}, "x")
        self.assertEqual(run["status"], "failed")
        self.assertIn("integration_not_connected", run["steps"][0]["error"])

    # ---- refresh ----

    def test_refresh_before_use_once_for_concurrent_steps(self):
        key = self.org()
        # The provider gives tokens of 30 seconds: within a minute of their end, so the next
        # use refreshes first (the expiry is sealed with the tokens: no way to fake it).
        self.mock_control("options", {"expires_in": 30})
        before = self.connect(key, "google_calendar")
        self.assertTrue(before["expires_at"])
        self.mock_control("options", {"expires_in": 0})
        emp = self.employee(key, "starter", 0)
        event = {"summary": "S", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T11:00:00Z"}
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "Cal", "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp, "action": "google_calendar.create_event",
                       "input": "{{trigger}}"}]}, key=key))
        runs = [self.assertJson(self.server.post("/v1/workflows/%s/run" % wf["id"],
                                                 {"input": event}, key=key))["id"]
                for _ in range(4)]
        done = [self.wait_run(key, wf["id"], r) for r in runs]
        self.assertEqual([d["status"] for d in done], ["completed"] * 4, done)
        refreshes = [r for r in self.mock_requests("/google/token")
                     if r["body"].get("grant_type") == "refresh_token"]
        self.assertEqual(len(refreshes), 1, "one refresh for concurrent steps")
        calls = self.mock_requests("/google/calendar")
        self.assertEqual(len({c["headers"]["authorization"] for c in calls}), 1,
                         "every call used the refreshed token")
        after = {x["provider"]: x for x in self.assertJson(
            self.server.get("/v1/integrations", key=key))["integrations"]}["google_calendar"]
        self.assertGreater(after["expires_at"], before["expires_at"])

    def test_refused_refresh_needs_reauthorization(self):
        key = self.org()
        self.mock_control("options", {"expires_in": 30})
        self.connect(key, "hubspot")
        self.mock_control("options", {"expires_in": 0})
        self.mock_control("tokens", {"refresh": []})  # every refresh token is now refused
        run = self.run_one(key, "hubspot.create_note", {}, "x")
        self.assertEqual(run["status"], "failed")
        self.assertIn("reauthorization_required", run["steps"][0]["error"])
        i = {x["provider"]: x for x in self.assertJson(
            self.server.get("/v1/integrations", key=key))["integrations"]}["hubspot"]
        self.assertEqual((i["status"], i["error"]), ("error", "reauthorization_required"))
        self.assertEqual(self.mock_requests("/hubspot/crm/v3/objects/notes"), [])
        # connecting again mends it
        self.connect(key, "hubspot")
        run = self.run_one(key, "hubspot.create_note", {}, "y")
        self.assertEqual(run["status"], "completed", run)
