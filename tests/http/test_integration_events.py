# SPDX-License-Identifier: MIT
"""Inbound integration events (issue 11, contract §13): Slack's v0 signature with its 5-minute
tolerance and the url_verification challenge, GitHub's X-Hub-Signature-256 and its ping; a
verified event starts the organization's matching `integration` workflows with the payload as
trigger data, once per delivery; bad, missing or stale signatures are 401 and start nothing;
the bot's own messages start nothing; unknown tokens, providers without events and missing
secrets; isolation between organizations and modes."""

import hashlib
import hmac
import json
import time
import uuid

from chatlib import ChatTestCase
from harness import GENEROUS_LIMITS

SLACK_SECRET = "slack-signing-" + uuid.uuid4().hex
GITHUB_SECRET = "gh-hook-" + uuid.uuid4().hex


def slack_headers(body, ts=None, secret=SLACK_SECRET):
    ts = str(int(time.time()) if ts is None else ts)
    base = b"v0:" + ts.encode() + b":" + body
    sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
            "Content-Type": "application/json"}


def github_headers(body, event="issues", delivery=None, secret=GITHUB_SECRET):
    sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": sig, "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "Content-Type": "application/json"}


class IntegrationEventsTest(ChatTestCase):

    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
                  "WORKFORCE_OAUTH_SLACK_SIGNING_SECRET": SLACK_SECRET,
                  "WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET": GITHUB_SECRET}

    def org(self, mode="test"):
        return self.server.create_key("ev-" + uuid.uuid4().hex[:8], mode=mode, credits=100000)

    def events_url(self, key, provider):
        b = self.assertJson(self.server.get("/v1/integrations", key=key))
        url = {i["provider"]: i["events_url"] for i in b["integrations"]}[provider]
        return url[url.index("/v1/"):]

    def workflow(self, key, event, enabled=True):
        emp = self.employee(key, "starter", 0)
        body = {"name": "On " + event, "trigger": {"type": "integration", "event": event},
                "enabled": enabled,
                "steps": [{"employee_id": emp, "action": "extract",
                           "input": "{{trigger.event.text}} {{trigger.issue.title}}",
                           "options": {"fields": {"email": "email"}}}]}
        return self.assertJson(self.server.post("/v1/workflows", body, key=key))

    def runs(self, key, wf):
        return self.assertJson(self.server.get("/v1/workflows/%s/runs?limit=100" % wf["id"],
                                               key=key))["runs"]

    def post(self, path, body, headers):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.server.request("POST", path, body=raw, headers=headers)

    def slack_message(self, text, event_id=None, **event):
        e = {"type": "message", "channel": "C1", "user": "U1", "text": text, "ts": "1.2"}
        e.update(event)
        return {"type": "event_callback", "team_id": "T1", "event": e,
                "event_id": event_id or "Ev" + uuid.uuid4().hex[:10], "event_time": 1}

    # ---- Slack ----

    def test_slack_event_starts_matching_workflows(self):
        key = self.org()
        wf = self.workflow(key, "slack.message")
        other = self.workflow(key, "slack.app_mention")
        off = self.workflow(key, "slack.message", enabled=False)
        path = self.events_url(key, "slack")
        body = json.dumps(self.slack_message("write to ana@example.com")).encode()
        r = self.post(path, body, slack_headers(body))
        got = self.assertJson(r)
        self.assertEqual(got["event"], "slack.message")
        self.assertFalse(got["duplicate"])
        self.assertEqual(len(got["runs"]), 1)
        [run] = self.runs(key, wf)
        self.assertEqual(run["id"], got["runs"][0])
        self.assertEqual(run["trigger"]["type"], "integration")
        self.assertEqual(run["trigger"]["event"], "slack.message")
        self.assertEqual(run["trigger"]["data"], json.loads(body))
        self.assertEqual(self.runs(key, other), [])
        self.assertEqual(self.runs(key, off), [])
        done = self.poll(lambda: (lambda x: x if x["status"] == "completed" else None)(
            self.assertJson(self.server.get("/v1/workflows/%s/runs/%s" % (wf["id"], run["id"]),
                                            key=key))), "the run completes", timeout=30)
        self.assertEqual(done["steps"][0]["output"], {"email": "ana@example.com"})
        # Slack retries the same event: nothing starts twice
        r = self.post(path, body, slack_headers(body))
        self.assertEqual(self.assertJson(r), {"event": "slack.message", "duplicate": True,
                                              "runs": []})
        self.assertEqual(len(self.runs(key, wf)), 1)

    def test_slack_url_verification(self):
        key = self.org()
        path = self.events_url(key, "slack")
        body = json.dumps({"type": "url_verification", "token": "x",
                           "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
                          ).encode()
        r = self.post(path, body, slack_headers(body))
        self.assertEqual(self.assertJson(r),
                         {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
        # the challenge needs the signature too
        r = self.post(path, body, slack_headers(body, secret="other"))
        self.assertError(r, 401, "invalid_signature")

    def test_slack_bad_signatures_start_nothing(self):
        key = self.org()
        wf = self.workflow(key, "slack.message")
        path = self.events_url(key, "slack")
        body = json.dumps(self.slack_message("hello")).encode()
        now = int(time.time())
        cases = {
            "wrong secret": slack_headers(body, secret="not-the-secret"),
            "stale (6 minutes old): a replay": slack_headers(body, ts=now - 360),
            "from the future": slack_headers(body, ts=now + 360),
            "no signature": {k: v for k, v in slack_headers(body).items()
                             if k != "X-Slack-Signature"},
            "no timestamp": {k: v for k, v in slack_headers(body).items()
                             if k != "X-Slack-Request-Timestamp"},
            "junk timestamp": dict(slack_headers(body), **{"X-Slack-Request-Timestamp": "soon"}),
            "truncated signature": dict(slack_headers(body), **{
                "X-Slack-Signature": slack_headers(body)["X-Slack-Signature"][:-1]}),
            "signed another body": slack_headers(body + b" "),
        }
        for what, headers in cases.items():
            with self.subTest(what):
                self.assertError(self.post(path, body, headers), 401, "invalid_signature")
        # a replay of a real, signed event once it is older than 5 minutes
        old = now - 301
        self.assertError(self.post(path, body, slack_headers(body, ts=old)), 401,
                         "invalid_signature")
        # within the tolerance it is accepted
        self.assertJson(self.post(path, body, slack_headers(body, ts=now - 290)))
        self.assertEqual(len(self.runs(key, wf)), 1)

    def test_bot_messages_start_nothing(self):
        key = self.org()
        wf = self.workflow(key, "slack.message")
        path = self.events_url(key, "slack")
        for extra in ({"bot_id": "B1"}, {"subtype": "bot_message"}):
            body = json.dumps(self.slack_message("I posted this", **extra)).encode()
            got = self.assertJson(self.post(path, body, slack_headers(body)))
            self.assertEqual((got["event"], got["runs"]), (None, []))
        self.assertEqual(self.runs(key, wf), [])

    # ---- GitHub ----

    def test_github_events(self):
        key = self.org()
        opened = self.workflow(key, "github.issues.opened")
        push = self.workflow(key, "github.push")
        path = self.events_url(key, "github")
        body = json.dumps({"action": "opened", "issue": {"title": "Crash ops@example.com"},
                           "repository": {"full_name": "acme/widgets"}}).encode()
        got = self.assertJson(self.post(path, body, github_headers(body, "issues")))
        self.assertEqual((got["event"], len(got["runs"])), ("github.issues.opened", 1))
        body2 = json.dumps({"ref": "refs/heads/main", "commits": []}).encode()
        got = self.assertJson(self.post(path, body2, github_headers(body2, "push")))
        self.assertEqual((got["event"], len(got["runs"])), ("github.push", 1))
        self.assertEqual(len(self.runs(key, opened)), 1)
        self.assertEqual(len(self.runs(key, push)), 1)
        # the same delivery again starts nothing
        h = github_headers(body, "issues", delivery="d-1")
        self.assertEqual(len(self.assertJson(self.post(path, body, h))["runs"]), 1)
        self.assertEqual(self.assertJson(self.post(path, body, h))["runs"], [])
        # ping: verified, nothing started
        ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        got = self.assertJson(self.post(path, ping, github_headers(ping, "ping")))
        self.assertEqual((got["event"], got["runs"]), (None, []))
        # bad signatures
        for headers in (github_headers(body, secret="x"),
                        {k: v for k, v in github_headers(body).items()
                         if k != "X-Hub-Signature-256"},
                        dict(github_headers(body), **{"X-Hub-Signature-256": "sha1=abc"}),
                        github_headers(body + b"\n")):
            self.assertError(self.post(path, body, headers), 401, "invalid_signature")
        self.assertEqual(len(self.runs(key, opened)), 2)

    # ---- addresses and isolation ----

    def test_urls_and_isolation(self):
        live, test = self.org("live"), self.org("test")
        b = self.assertJson(self.server.get("/v1/integrations", key=live))
        urls = {i["provider"]: i["events_url"] for i in b["integrations"]}
        for p in ("google_calendar", "outlook", "hubspot"):
            self.assertIsNone(urls[p], p)
        self.assertNotEqual(self.events_url(live, "slack"), self.events_url(test, "slack"))
        wf_test = self.workflow(test, "slack.message")
        # an event to the live URL does not start the test mode's workflow
        path = self.events_url(live, "slack")
        body = json.dumps(self.slack_message("x")).encode()
        self.assertEqual(self.assertJson(self.post(path, body, slack_headers(body)))["runs"], [])
        self.assertEqual(self.runs(test, wf_test), [])
        # unknown token, provider without events, unknown provider
        token = path.rsplit("/", 1)[1]
        for p in ("/v1/integrations/slack/events/" + "Z" * 40,
                  "/v1/integrations/hubspot/events/" + token,
                  "/v1/integrations/dropbox/events/" + token):
            with self.subTest(path=p):
                self.assertError(self.post(p, body, slack_headers(body)), 404, "route_not_found")
        # the body must be a JSON object
        for raw in (b"", b"[1]", b"not json"):
            with self.subTest(body=raw):
                self.assertError(self.post(path, raw, slack_headers(raw)), 400,
                                 "invalid_request")


class IntegrationEventsUnconfiguredTest(ChatTestCase):
    """Without a signing secret nothing can be verified: 400, nothing started."""

    def test_no_secret(self):
        key = self.server.create_key("ev-none-" + uuid.uuid4().hex[:6], mode="test")
        b = self.assertJson(self.server.get("/v1/integrations", key=key))
        url = {i["provider"]: i["events_url"] for i in b["integrations"]}["slack"]
        path = url[url.index("/v1/"):]
        body = json.dumps({"type": "event_callback", "event": {"type": "message"}}).encode()
        r = self.server.request("POST", path, body=body, headers=slack_headers(body))
        self.assertError(r, 400, "integration_not_configured", "provider")
