# SPDX-License-Identifier: MIT
"""Inbound integration events (issue 11, contract §13): Slack's v0 signature with its 5-minute
tolerance and the url_verification challenge, GitHub's X-Hub-Signature-256 and its ping; a
verified event starts the organization's matching `integration` workflows with the payload as
trigger data, once per delivery; bad, missing or stale signatures are 401 and start nothing;
the bot's own messages start nothing; unknown tokens, providers without events and missing
secrets; isolation between organizations and modes.

Issue 26 (finding 4 and the first point of 8): unsigned, badly signed or oversized events cost
the organization none of its limits; the events URL of a provider is rotated (the old token is
404 at once); GitHub's webhook secret is the organization's own when it sets one (write-only,
sealed); the events of the server's Slack app go to the organizations whose connection holds
the event's workspace; resends without a delivery id (and Slack's retries) start nothing twice."""

import hashlib
import hmac
import json
import os
import sys
import time
import uuid

from chatlib import ChatTestCase
from harness import GENEROUS_LIMITS, Server, free_port, raw_head, read_response
from oauthlib import browser_connect

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mock"))
import provider_mock  # noqa: E402

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


def without(headers, *names):
    return {k: v for k, v in headers.items() if k not in names}


def files_hold(tmpdir, needle):
    """The files under 'tmpdir' (database, WAL, log) that contain 'needle'."""
    found = []
    for root, _, names in os.walk(tmpdir):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                if needle.encode() in f.read():
                    found.append(n)
    return found


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

    # ---- resends without a delivery id (issue 26, finding 8) ----

    def test_resends_without_delivery_id_start_nothing_twice(self):
        key = self.org()
        opened = self.workflow(key, "github.issues.opened")
        msg = self.workflow(key, "slack.message")
        gh, sl = self.events_url(key, "github"), self.events_url(key, "slack")
        body = json.dumps({"action": "opened", "issue": {"title": "No id"}}).encode()
        h = without(github_headers(body, "issues"), "X-GitHub-Delivery")
        first = self.assertJson(self.post(gh, body, h))
        self.assertEqual((first["duplicate"], len(first["runs"])), (False, 1))
        again = self.assertJson(self.post(gh, body, h))
        self.assertEqual((again["event"], again["duplicate"], again["runs"]),
                         ("github.issues.opened", True, []))
        other = json.dumps({"action": "opened", "issue": {"title": "Another"}}).encode()
        h2 = without(github_headers(other, "issues"), "X-GitHub-Delivery")
        self.assertEqual(len(self.assertJson(self.post(gh, other, h2))["runs"]), 1)
        self.assertEqual(len(self.runs(key, opened)), 2)
        # Slack: an event without event_id, then Slack's retries of it (a new timestamp, a new
        # signature, X-Slack-Retry-Num): one run
        event = self.slack_message("no id")
        del event["event_id"]
        raw = json.dumps(event).encode()
        self.assertEqual(len(self.assertJson(self.post(sl, raw, slack_headers(raw)))["runs"]), 1)
        for n in (1, 2):
            h = dict(slack_headers(raw, ts=int(time.time()) + n),
                     **{"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"})
            got = self.assertJson(self.post(sl, raw, h))
            self.assertEqual((got["duplicate"], got["runs"]), (True, []), n)
        # and with its event_id, a retry is the same delivery too
        raw = json.dumps(self.slack_message("with id")).encode()
        self.assertEqual(len(self.assertJson(self.post(sl, raw, slack_headers(raw)))["runs"]), 1)
        h = dict(slack_headers(raw), **{"X-Slack-Retry-Num": "1"})
        self.assertEqual(self.assertJson(self.post(sl, raw, h))["runs"], [])
        self.assertEqual(len(self.runs(key, msg)), 2)

    # ---- the events URL is rotated (issue 26, finding 4) ----

    def test_rotate_events_url(self):
        key = self.org()
        wf = self.workflow(key, "github.push")
        old_gh, old_sl = self.events_url(key, "github"), self.events_url(key, "slack")
        self.assertNotEqual(old_gh.rsplit("/", 1)[1], old_sl.rsplit("/", 1)[1],
                            "a token for each provider")
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        self.assertError(self.post("/v1/integrations/github/events/" + old_sl.rsplit("/", 1)[1],
                                   body, github_headers(body, "push")), 404, "route_not_found")
        v = self.assertJson(self.server.post("/v1/integrations/github/events/rotate", None,
                                             key=key))
        self.assertEqual(set(v), {"provider", "events_url", "secret_set", "verified_with"})
        self.assertEqual((v["provider"], v["secret_set"], v["verified_with"]),
                         ("github", False, "server"))
        new_gh = v["events_url"][v["events_url"].index("/v1/"):]
        self.assertRegex(new_gh, r"^/v1/integrations/github/events/[A-Za-z0-9]{40}$")
        self.assertNotEqual(new_gh, old_gh)
        self.assertEqual(self.events_url(key, "github"), new_gh, "the record shows it")
        self.assertEqual(self.events_url(key, "slack"), old_sl, "Slack's is another URL")
        # the old token names no one from now on, a signed event included
        self.assertError(self.post(old_gh, body, github_headers(body, "push")), 404,
                         "route_not_found")
        self.assertEqual(len(self.assertJson(self.post(new_gh, body,
                                                       github_headers(body, "push")))["runs"]), 1)
        self.assertEqual(len(self.runs(key, wf)), 1)
        again = self.assertJson(self.server.get("/v1/integrations/github/events", key=key))
        self.assertEqual(again, v)
        # providers without events, unknown providers, keys and scopes
        self.assertError(self.server.post("/v1/integrations/hubspot/events/rotate", None,
                                          key=key), 400, "invalid_request", "provider")
        self.assertError(self.server.post("/v1/integrations/dropbox/events/rotate", None,
                                          key=key), 404, "provider_not_found", "provider")
        self.assertError(self.server.post("/v1/integrations/github/events/rotate", None), 401,
                         "missing_api_key")
        chat_only = self.server.create_key("ev-" + uuid.uuid4().hex[:8], scopes="chat")
        self.assertError(self.server.post("/v1/integrations/github/events/rotate", None,
                                          key=chat_only), 403, "permission_denied")

    # ---- GitHub's secret is the organization's (issue 26, finding 4) ----

    def test_github_secret_of_the_organization(self):
        a, b = self.org(), self.org()
        wf_a, wf_b = self.workflow(a, "github.push"), self.workflow(b, "github.push")
        path_a, path_b = self.events_url(a, "github"), self.events_url(b, "github")
        own = "own-" + uuid.uuid4().hex
        r = self.server.post("/v1/integrations/github/events/secret", {"secret": own}, key=a)
        v = self.assertJson(r)
        self.assertEqual((v["provider"], v["secret_set"], v["verified_with"]),
                         ("github", True, "organization"))
        self.assertEqual(v["events_url"][v["events_url"].index("/v1/"):], path_a)
        self.assertNotIn(own.encode(), r.body, "never answered")
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        # the server's secret, which every organization knows, no longer signs A's events
        self.assertError(self.post(path_a, body, github_headers(body, "push")), 401,
                         "invalid_signature")
        got = self.assertJson(self.post(path_a, body, github_headers(body, "push", secret=own)))
        self.assertEqual(len(got["runs"]), 1)
        # B has none: the server's secret signs B's (and A's own does not)
        self.assertError(self.post(path_b, body, github_headers(body, "push", secret=own)), 401,
                         "invalid_signature")
        self.assertEqual(len(self.assertJson(self.post(
            path_b, body, github_headers(body, "push")))["runs"]), 1)
        self.assertEqual((len(self.runs(a, wf_a)), len(self.runs(b, wf_b))), (1, 1))
        view = self.assertJson(self.server.get("/v1/integrations/github/events", key=a))
        self.assertEqual((view["secret_set"], view["verified_with"]), (True, "organization"))
        self.assertNotIn(own.encode(), json.dumps(view).encode())
        self.assertEqual(files_hold(self.server.tmpdir, own), [], "sealed at rest, never logged")
        # another mode of the same organization is another tenant
        # null forgets it: the server's secret again
        v = self.assertJson(self.server.post("/v1/integrations/github/events/secret",
                                             {"secret": None}, key=a))
        self.assertEqual((v["secret_set"], v["verified_with"]), (False, "server"))
        self.assertEqual(len(self.assertJson(self.post(
            path_a, body, github_headers(body, "push")))["runs"]), 1)
        # refusals
        for bad, param in (({"secret": "short"}, "secret"), ({}, "secret"),
                           ({"secret": 5}, "secret"), ({"secret": "x" * 257}, "secret"),
                           ({"secret": "tab\there-and-long-enough"}, "secret"),
                           ({"secret": own, "x": 1}, "x")):
            with self.subTest(body=bad):
                self.assertError(self.server.post("/v1/integrations/github/events/secret", bad,
                                                  key=a), 400, "invalid_request", param)
        for p in ("slack", "hubspot"):
            with self.subTest(provider=p):
                self.assertError(self.server.post("/v1/integrations/%s/events/secret" % p,
                                                  {"secret": own}, key=a), 400,
                                 "invalid_request", "provider")
        self.assertEqual(self.assertJson(self.server.get(
            "/v1/integrations/github/events", key=a))["secret_set"], False)

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
    """Without a signing secret nothing can be verified: 400, nothing started; an organization
    that sets its own GitHub secret needs none of the server."""

    def test_own_secret_without_the_servers(self):
        key = self.server.create_key("ev-own-" + uuid.uuid4().hex[:6], mode="test")
        v = self.assertJson(self.server.get("/v1/integrations/github/events", key=key))
        self.assertEqual((v["secret_set"], v["verified_with"]), (False, None))
        path = v["events_url"][v["events_url"].index("/v1/"):]
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        self.assertError(self.server.request("POST", path, body=body,
                                             headers=github_headers(body, "push")),
                         400, "integration_not_configured", "provider")
        own = "own-secret-" + uuid.uuid4().hex
        self.assertJson(self.server.post("/v1/integrations/github/events/secret",
                                         {"secret": own}, key=key))
        got = self.assertJson(self.server.request(
            "POST", path, body=body, headers=github_headers(body, "push", secret=own)))
        self.assertEqual((got["event"], got["duplicate"]), ("github.push", False))

    def test_no_secret(self):
        key = self.server.create_key("ev-none-" + uuid.uuid4().hex[:6], mode="test")
        b = self.assertJson(self.server.get("/v1/integrations", key=key))
        url = {i["provider"]: i["events_url"] for i in b["integrations"]}["slack"]
        path = url[url.index("/v1/"):]
        body = json.dumps({"type": "event_callback", "event": {"type": "message"}}).encode()
        r = self.server.request("POST", path, body=body, headers=slack_headers(body))
        self.assertError(r, 400, "integration_not_configured", "provider")


class IntegrationEventLimitsTest(ChatTestCase):
    """Issue 26 finding 4: 12 unsigned POSTs to an events URL locked its organization out (429
    on its own GET /v1/account). Unsigned, badly signed and oversized events are refused before
    they count against the limits; signed ones count as before."""

    server_env = {"WORKFORCE_RATE_LIMITS": "starter:20/5/2,manager:20/5/2,agency:20/5/2",
                  "WORKFORCE_OAUTH_SLACK_SIGNING_SECRET": SLACK_SECRET,
                  "WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET": GITHUB_SECRET}

    def test_unsigned_events_cost_the_organization_nothing(self):
        key = self.server.create_key("ev-lim-" + uuid.uuid4().hex[:6], mode="test")
        b = self.assertJson(self.server.get("/v1/integrations", key=key))
        urls = {i["provider"]: i["events_url"] for i in b["integrations"]}
        gh = urls["github"][urls["github"].index("/v1/"):]
        sl = urls["slack"][urls["slack"].index("/v1/"):]
        body = json.dumps({"action": "opened", "issue": {"title": "x"}}).encode()
        refused = []
        for i in range(12):
            refused.append(self.server.request("POST", gh, body=body, headers={
                "Content-Type": "application/json", "X-GitHub-Event": "issues"}))
            refused.append(self.server.request("POST", gh, body=body,
                                               headers=github_headers(body, secret="wrong")))
            refused.append(self.server.request("POST", sl, body=body,
                                               headers=slack_headers(body, secret="wrong")))
        # a body declared over 1 MiB is refused unread
        s = self.server.connect()
        try:
            s.sendall(raw_head("POST", gh, "127.0.0.1", {
                "Content-Type": "application/json", "X-GitHub-Event": "issues",
                "X-Hub-Signature-256": "sha256=" + "0" * 64, "Content-Length": str(2 << 20)}))
            r = read_response(s, timeout=10)
        finally:
            s.close()
        self.assertError(r, 413, "request_too_large")
        refused.append(r)
        for r in refused[:-1]:
            self.assertError(r, 401, "invalid_signature")
        for r in refused:
            self.assertIsNone(r.header("X-RateLimit-Limit"), "not counted: %r" % r)
        # the organization's own requests go on
        r = self.server.get("/v1/account", key=key)
        self.assertJson(r)
        self.assertEqual(int(r.header("X-RateLimit-Remaining")),
                         int(r.header("X-RateLimit-Limit")) - 2, "only its own two counted")
        # a verified event is the organization's request: it counts, and is refused past the
        # burst like any other
        statuses = []
        for i in range(6):
            raw = json.dumps({"ref": "refs/heads/%d" % i}).encode()
            r = self.server.request("POST", gh, body=raw, headers=github_headers(raw, "push"))
            statuses.append(r.status)
            if r.status == 200:
                self.assertIsNotNone(r.header("X-RateLimit-Limit"))
            else:
                self.assertError(r, 429, "rate_limit_exceeded")
        self.assertEqual(statuses[:3], [200, 200, 200], statuses)
        self.assertIn(429, statuses)


class SlackAppEventsTest(ChatTestCase):
    """Issue 26 finding 4: one Slack app serves many organizations. Its events (signed with the
    app's secret) arrive at /v1/integrations/slack/events and go to each organization and mode
    whose Slack connection holds the event's workspace (team_id); tests/mock/provider_mock.py's
    Slack answers the workspace T0MOCKTEAM at connect."""

    @classmethod
    def setUpClass(cls):
        cls.mock = provider_mock.ProviderMock().start()
        port = free_port()
        cls.base = "http://127.0.0.1:%d" % port
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_PUBLIC_URL": cls.base,
               "WORKFORCE_OAUTH_SLACK_SIGNING_SECRET": SLACK_SECRET}
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

    def org(self, mode="test"):
        return self.server.create_key("sa-" + uuid.uuid4().hex[:8], mode=mode, credits=100000)

    def connect_slack(self, key):
        c = self.assertJson(self.server.post("/v1/integrations/slack/connect", {}, key=key))
        r = browser_connect(self.server, self.base, c["authorization_url"], "slack")
        self.assertEqual(r.status, 200, r)

    def workflow(self, key):
        emp = self.employee(key, "starter", 0)
        return self.assertJson(self.server.post("/v1/workflows", {
            "name": "On a message", "trigger": {"type": "integration", "event": "slack.message"},
            "steps": [{"employee_id": emp, "action": "extract", "input": "{{trigger.event.text}}",
                       "options": {"fields": {"email": "email"}}}]}, key=key))

    def runs(self, key, wf):
        return self.assertJson(self.server.get("/v1/workflows/%s/runs?limit=100" % wf["id"],
                                               key=key))["runs"]

    def send(self, body, headers=None):
        raw = json.dumps(body).encode()
        return self.server.request("POST", "/v1/integrations/slack/events", body=raw,
                                   headers=headers or slack_headers(raw))

    def event(self, team, text="hello", event_id=None):
        return {"type": "event_callback", "team_id": team, "api_app_id": "A1",
                "event": {"type": "message", "channel": "C1", "user": "U1", "text": text,
                          "ts": "1.2"},
                "event_id": event_id or "Ev" + uuid.uuid4().hex[:10], "event_time": 1}

    def test_routed_by_workspace(self):
        a, c = self.org(), self.org()
        org_b = "sa-" + uuid.uuid4().hex[:8]
        b = self.server.create_key(org_b, mode="test", credits=100000)
        b_live = self.server.create_key(org_b, mode="live", credits=100000)
        self.connect_slack(a)
        self.connect_slack(c)
        self.connect_slack(b_live)  # B's live mode holds the workspace; its test mode does not
        wfs = {k: self.workflow(k) for k in (a, b, c, b_live)}
        got = self.assertJson(self.send(self.event("T0MOCKTEAM")))
        self.assertEqual((got["event"], got["duplicate"], len(got["runs"])),
                         ("slack.message", False, 3))
        self.assertEqual({k: len(self.runs(k, w)) for k, w in wfs.items()},
                         {a: 1, b: 0, c: 1, b_live: 1})
        # Slack's retry reaches the same connections, which had it already
        ev = self.event("T0MOCKTEAM", "again")
        self.assertEqual(len(self.assertJson(self.send(ev))["runs"]), 3)
        raw = json.dumps(ev).encode()
        retry = dict(slack_headers(raw), **{"X-Slack-Retry-Num": "1"})
        got = self.assertJson(self.send(ev, retry))
        self.assertEqual((got["duplicate"], got["runs"]), (True, []))
        # another workspace reaches no one; an event without one neither
        got = self.assertJson(self.send(self.event("T0THEIRS")))
        self.assertEqual((got["duplicate"], got["runs"]), (False, []))
        ev = self.event("T0MOCKTEAM")
        del ev["team_id"]
        self.assertEqual(self.assertJson(self.send(ev))["runs"], [])
        # a disconnected organization no longer receives
        self.assertJson(self.server.request("DELETE", "/v1/integrations/slack", key=a))
        self.assertEqual(len(self.assertJson(self.send(self.event("T0MOCKTEAM")))["runs"]), 2)
        self.assertEqual({k: len(self.runs(k, w)) for k, w in wfs.items()},
                         {a: 2, b: 0, c: 3, b_live: 3})

    def test_signature_and_challenge(self):
        a = self.org()
        self.connect_slack(a)
        wf = self.workflow(a)
        ev = self.event("T0MOCKTEAM")
        raw = json.dumps(ev).encode()
        for headers in (slack_headers(raw, secret="wrong"),
                        slack_headers(raw, ts=int(time.time()) - 600),
                        without(slack_headers(raw), "X-Slack-Signature"),
                        {"Content-Type": "application/json"}):
            self.assertError(self.send(ev, headers), 401, "invalid_signature")
        self.assertEqual(self.runs(a, wf), [])
        ch = {"type": "url_verification", "token": "x", "challenge": "c-" + uuid.uuid4().hex}
        self.assertEqual(self.assertJson(self.send(ch)), {"challenge": ch["challenge"]})
        raw = json.dumps(ch).encode()
        self.assertError(self.send(ch, slack_headers(raw, secret="wrong")), 401,
                         "invalid_signature")
        # only Slack has such a URL
        for p in ("github", "hubspot", "dropbox"):
            r = self.server.request("POST", "/v1/integrations/%s/events" % p, body=raw,
                                    headers=slack_headers(raw))
            self.assertError(r, 404, "route_not_found")
