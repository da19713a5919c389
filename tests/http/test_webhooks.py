# SPDX-License-Identifier: MIT
"""Events and outbound webhooks (issue 14 items 1, 2 and 5, contract §15): events recorded with
the change they report and read back (list, filter, cursor, get, isolation, scope); endpoints
(create with the secret shown once, list, read, update, delete, rotate, every bad input);
deliveries to a receiver of the test's own, verified by the Standard Webhooks reference library
(npm `standardwebhooks`) as a receiver would; retries after a 500 and after a timeout; a restart
between attempts; redelivery; private addresses refused without WORKFORCE_WEBHOOKS_ALLOW_PRIVATE.
The timeout, slow-receiver and restart tests run only with WORKFORCE_SLOW_TESTS=1."""

import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
import unittest
import uuid

from harness import GENEROUS_LIMITS, REPO_ROOT, TS_RE, ServerTestCase

EVENT_ID_RE = r"^evt_[A-Za-z0-9]{20,}$"
ENDPOINT_ID_RE = r"^we_[A-Za-z0-9]{20,}$"
DELIVERY_ID_RE = r"^wdl_[A-Za-z0-9]{20,}$"
SECRET_RE = r"^whsec_[A-Za-z0-9+/]{32}$"
ENDPOINT_FIELDS = {"id", "url", "events", "enabled", "description", "created_at", "updated_at"}
DELIVERY_FIELDS = {"id", "endpoint_id", "event_id", "status", "attempts", "last_status_code",
                   "last_error", "next_attempt_at", "created_at", "updated_at"}
NO_EVENT = "evt_" + "Z" * 24
# The tests that spend most of their time waiting for a timeout or a 5 s retry run once per
# `make test` (its first HTTP run sets WORKFORCE_SLOW_TESTS=1); the 500-then-200 retry runs in
# every run, on one node and on two.
slow = unittest.skipUnless(os.environ.get("WORKFORCE_SLOW_TESTS") == "1",
                           "slow (timeouts and retries): set WORKFORCE_SLOW_TESTS=1")
NO_ENDPOINT = "we_" + "Z" * 24


class Receiver:
    """An HTTP receiver on 127.0.0.1: records every POST and answers by a script (a list of
    (status, delay seconds) used in order, then 200)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.got = []
        self.script = []
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with rec.lock:
                    rec.got.append({"headers": {k.lower(): v for k, v in self.headers.items()},
                                    "body": body.decode(), "at": time.time()})
                    status, delay = rec.script.pop(0) if rec.script else (200, 0)
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:
                    pass

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/hook" % self.httpd.server_address[1]

    def received(self, event_id=None):
        with self.lock:
            return [g for g in self.got
                    if event_id is None or g["headers"].get("webhook-id") == event_id]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def sign(secret, msg_id, ts, body):
    """The Standard Webhooks v1 signature, computed independently of the server."""
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, ("%s.%s.%s" % (msg_id, ts, body)).encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def node_verify(items):
    """Each {secret, headers, body} verified by the `standardwebhooks` npm package."""
    lines = "".join(json.dumps(i) + "\n" for i in items)
    p = subprocess.run(["node", os.path.join(REPO_ROOT, "tests", "npm", "verify_webhooks.mjs")],
                       input=lines.encode(), capture_output=True, timeout=60, cwd=REPO_ROOT)
    if p.returncode != 0:
        raise AssertionError("verify_webhooks.mjs failed: %s" % p.stderr.decode()[-2000:])
    return [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]


class HooksCase(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS,
                  "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE": "1",
                  "WORKFORCE_WEBHOOKS_TIMEOUT_MS": "1000"}

    def setUp(self):
        self.recv = Receiver()
        self.addCleanup(self.recv.close)

    def org(self, mode="test", scopes=None):
        slug = "wh-%s" % uuid.uuid4().hex[:8]
        return self.server.create_key(slug, mode=mode, credits=100000, scopes=scopes)

    def employee(self, key):
        body = self.assertJson(self.server.get("/v1/employees?limit=100", key=key))
        return [e for e in body["employees"] if e["tier"] == "starter"][0]["id"]

    def endpoint(self, key, url=None, events=("*",), **kw):
        body = {"url": url or self.recv.url, "events": list(events)}
        body.update(kw)
        ep = self.assertJson(self.server.post("/v1/webhook_endpoints", body, key=key))
        self.assertRegex(ep["id"], ENDPOINT_ID_RE)
        self.assertRegex(ep["secret"], SECRET_RE)
        self.assertEqual(set(ep), ENDPOINT_FIELDS | {"secret"})
        return ep

    def task_done(self, key, emp=None):
        """A task carried out by the built-in engine: the task as it ended."""
        emp = emp or self.employee(key)
        t = self.assertJson(self.server.post("/v1/tasks", {"employee_id": emp,
                                                           "title": "Write a haiku " + uuid.uuid4().hex[:6]},
                                             key=key))
        return self.poll(lambda: (lambda x: x if x["status"] in ("completed", "failed") else None)(
            self.assertJson(self.server.get("/v1/tasks/" + t["id"], key=key))),
            "task %s ended" % t["id"], timeout=60)

    def events(self, key, **q):
        path = "/v1/events" + ("?" + "&".join("%s=%s" % kv for kv in q.items()) if q else "")
        return self.assertJson(self.server.get(path, key=key))

    def event_of(self, key, type_, object_id):
        def find():
            for ev in self.events(key, type=type_, limit=100)["events"]:
                if ev["data"]["object"].get("id", ev["data"]["object"].get("provider")) == object_id:
                    return ev
            return None
        return self.poll(find, "%s event of %s" % (type_, object_id), timeout=60)

    def deliveries(self, key, ep_id, **q):
        path = "/v1/webhook_endpoints/%s/deliveries" % ep_id
        if q:
            path += "?" + "&".join("%s=%s" % kv for kv in q.items())
        return self.assertJson(self.server.get(path, key=key))["deliveries"]

    def delivery(self, key, ep_id, event_id, pred, what, timeout=30):
        def look():
            for d in self.deliveries(key, ep_id, event_id=event_id):
                if pred(d):
                    return d
            return None
        return self.poll(look, what, timeout=timeout)


class EventsTest(HooksCase):
    def test_task_completed_event_is_the_task_as_it_ended(self):
        key = self.org()
        task = self.task_done(key)
        self.assertEqual(task["status"], "completed", task)
        ev = self.event_of(key, "task.completed", task["id"])
        self.assertRegex(ev["id"], EVENT_ID_RE)
        self.assertEqual(set(ev), {"id", "type", "created_at", "data"})
        self.assertRegex(ev["created_at"], TS_RE)
        self.assertEqual(set(ev["data"]), {"object"})
        obj = ev["data"]["object"]
        self.assertEqual(obj["status"], "completed")
        self.assertEqual(obj["result"], task["result"])
        self.assertEqual(obj["completed_at"], task["completed_at"])
        # read back by id, the same
        self.assertEqual(self.assertJson(self.server.get("/v1/events/" + ev["id"], key=key)), ev)
        # exactly one event for the run
        same = [e for e in self.events(key, limit=100)["events"]
                if e["data"]["object"].get("id") == task["id"]]
        self.assertEqual(len(same), 1, same)

    def test_document_ready_and_failed(self):
        key = self.org()
        from test_knowledge import multipart
        for data, name, want in ((b"Webhooks announce what happened.\n", "a.txt", "ready"),
                                 (b"%PDF-1.4 not really a pdf", "b.pdf", "failed")):
            body, ctype = multipart((), [("file", name, None, data)])
            r = self.server.request("POST", "/v1/knowledge/documents", body=body, key=key,
                                    content_type=ctype)
            doc = self.assertJson(r)
            ev = self.event_of(key, "document." + want, doc["id"])
            self.assertEqual(ev["data"]["object"]["status"], want)
            self.assertEqual(ev["data"]["object"]["filename"], name)

    def test_workflow_run_completed(self):
        key = self.org()
        emp = self.employee(key)
        wf = self.assertJson(self.server.post("/v1/workflows", {
            "name": "ev " + uuid.uuid4().hex[:6], "trigger": {"type": "manual"},
            "steps": [{"employee_id": emp, "action": "summarize", "input": "{{trigger.text}}"}]},
            key=key))
        run = self.assertJson(self.server.post("/v1/workflows/%s/run" % wf["id"],
                                               {"input": {"text": "One. Two. Three."}}, key=key))
        ev = self.event_of(key, "workflow_run.completed", run["id"])
        self.assertEqual(ev["data"]["object"]["status"], "completed")
        self.assertEqual(len(ev["data"]["object"]["steps"]), 1)

    def test_list_order_filter_cursor_and_errors(self):
        key = self.org()
        done = [self.task_done(key) for _ in range(3)]
        for t in done:
            self.event_of(key, "task.completed", t["id"])
        page1 = self.events(key, limit=2)
        self.assertEqual(set(page1), {"events", "has_more", "next_cursor"})
        self.assertEqual(len(page1["events"]), 2)
        self.assertTrue(page1["has_more"])
        page2 = self.events(key, limit=2, before=page1["next_cursor"])
        ids = [e["id"] for e in page1["events"] + page2["events"]]
        self.assertEqual(len(ids), len(set(ids)))
        times = [e["created_at"] for e in page1["events"] + page2["events"]]
        self.assertEqual(times, sorted(times, reverse=True))
        self.assertEqual(self.events(key, type="task.failed")["events"], [])
        self.assertError(self.server.get("/v1/events?type=task.done", key=key), 400,
                         "invalid_request", "type")
        self.assertError(self.server.get("/v1/events?limit=0", key=key), 400, "invalid_request",
                         "limit")
        self.assertError(self.server.get("/v1/events/" + NO_EVENT, key=key), 404,
                         "event_not_found", "id")

    def test_isolation_and_scope(self):
        key = self.org()
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        other = self.org()
        self.assertError(self.server.get("/v1/events/" + ev["id"], key=other), 404,
                         "event_not_found", "id")
        self.assertEqual([e for e in self.events(other)["events"] if e["id"] == ev["id"]], [])
        scoped = self.org(scopes="tasks")
        self.assertError(self.server.get("/v1/events", key=scoped), 403, "permission_denied")
        self.assertError(self.server.get("/v1/webhook_endpoints", key=scoped), 403,
                         "permission_denied")
        ok = self.org(scopes="webhooks")
        self.assertJson(self.server.get("/v1/events", key=ok))


class EndpointsTest(HooksCase):
    def test_crud_and_secret_shown_once(self):
        key = self.org()
        ep = self.endpoint(key, events=["task.completed", "task.failed"], description="ops")
        self.assertEqual(ep["events"], ["task.completed", "task.failed"])
        self.assertTrue(ep["enabled"])
        got = self.assertJson(self.server.get("/v1/webhook_endpoints/" + ep["id"], key=key))
        self.assertNotIn("secret", got)
        self.assertEqual(set(got), ENDPOINT_FIELDS)
        lst = self.assertJson(self.server.get("/v1/webhook_endpoints", key=key))
        self.assertEqual([e["id"] for e in lst["webhook_endpoints"]], [ep["id"]])
        self.assertNotIn("secret", lst["webhook_endpoints"][0])
        up = self.assertJson(self.server.patch("/v1/webhook_endpoints/" + ep["id"],
                                               {"enabled": False, "events": ["*"],
                                                "description": None}, key=key))
        self.assertFalse(up["enabled"])
        self.assertEqual(up["events"], ["*"])
        self.assertIsNone(up["description"])
        self.assertNotIn("secret", up)
        rot = self.assertJson(self.server.post("/v1/webhook_endpoints/%s/rotate_secret" % ep["id"],
                                               {}, key=key))
        self.assertRegex(rot["secret"], SECRET_RE)
        self.assertNotEqual(rot["secret"], ep["secret"])
        d = self.assertJson(self.server.request("DELETE", "/v1/webhook_endpoints/" + ep["id"],
                                                key=key))
        self.assertEqual(d, {"id": ep["id"], "deleted": True})
        self.assertError(self.server.get("/v1/webhook_endpoints/" + ep["id"], key=key), 404,
                         "webhook_endpoint_not_found", "id")
        other = self.org()
        ep2 = self.endpoint(key)
        self.assertError(self.server.get("/v1/webhook_endpoints/" + ep2["id"], key=other), 404,
                         "webhook_endpoint_not_found", "id")

    def test_bad_input(self):
        key = self.org()
        url = self.recv.url
        cases = [
            ({"url": "/relative", "events": ["*"]}, "url"),
            ({"url": "ftp://example.com/x", "events": ["*"]}, "url"),
            ({"url": "http://user:pw@example.com/x", "events": ["*"]}, "url"),
            ({"url": "https://example.com/x#frag", "events": ["*"]}, "url"),
            ({"url": "https://", "events": ["*"]}, "url"),
            ({"url": "https://example.com/" + "a" * 2100, "events": ["*"]}, "url"),
            ({"url": 7, "events": ["*"]}, "url"),
            ({"events": ["*"]}, "url"),
            ({"url": url}, "events"),
            ({"url": url, "events": []}, "events"),
            ({"url": url, "events": ["task.done"]}, "events[0]"),
            ({"url": url, "events": ["task.failed", "task.failed"]}, "events[1]"),
            ({"url": url, "events": "*"}, "events"),
            ({"url": url, "events": ["*"], "description": "d" * 501}, "description"),
            ({"url": url, "events": ["*"], "enabled": "yes"}, "enabled"),
            ({"url": url, "events": ["*"], "secret": "whsec_x"}, "secret"),
        ]
        for body, param in cases:
            r = self.server.post("/v1/webhook_endpoints", body, key=key)
            self.assertError(r, 400, "invalid_request", param)
        self.assertEqual(self.assertJson(self.server.get("/v1/webhook_endpoints", key=key))
                         ["webhook_endpoints"], [], "nothing half-made")
        ep = self.endpoint(key)
        self.assertError(self.server.patch("/v1/webhook_endpoints/" + ep["id"],
                                           {"url": "nope"}, key=key), 400, "invalid_request", "url")
        self.assertError(self.server.patch("/v1/webhook_endpoints/" + NO_ENDPOINT,
                                           {"enabled": True}, key=key), 404,
                         "webhook_endpoint_not_found", "id")
        # at most 16 per organization and mode
        for _ in range(15):
            self.endpoint(key)
        self.assertError(self.server.post("/v1/webhook_endpoints",
                                          {"url": url, "events": ["*"]}, key=key), 400,
                         "invalid_request")


class DeliveryTest(HooksCase):
    def test_delivered_signed_and_verified_by_standardwebhooks(self):
        key = self.org()
        ep = self.endpoint(key, events=["task.completed"])
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        d = self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                          "delivered")
        self.assertEqual(set(d), DELIVERY_FIELDS)
        self.assertRegex(d["id"], DELIVERY_ID_RE)
        self.assertEqual(d["attempts"], 1)
        self.assertEqual(d["last_status_code"], 200)
        self.assertIsNone(d["next_attempt_at"])
        got = self.recv.received(ev["id"])
        self.assertEqual(len(got), 1, got)
        h, body = got[0]["headers"], got[0]["body"]
        self.assertEqual(json.loads(body), ev)
        self.assertTrue(h["content-type"].startswith("application/json"))
        self.assertLessEqual(abs(int(h["webhook-timestamp"]) - time.time()), 30)
        self.assertEqual(h["webhook-signature"],
                         sign(ep["secret"], ev["id"], h["webhook-timestamp"], body))
        items = [{"secret": ep["secret"], "headers": {k: h[k] for k in (
            "webhook-id", "webhook-timestamp", "webhook-signature")}, "body": body}]
        tampered = dict(items[0], body=body.replace("completed", "failed", 1))
        wrong = dict(items[0], secret="whsec_" + base64.b64encode(os.urandom(24)).decode())
        res = node_verify(items + [tampered, wrong])
        self.assertEqual([r["ok"] for r in res], [True, False, False], res)
        self.assertEqual(res[0]["type"], "task.completed")

    def test_filter_and_disabled(self):
        key = self.org()
        only_failed = self.endpoint(key, events=["task.failed"])
        off = self.endpoint(key, events=["*"], enabled=False)
        on = self.endpoint(key, events=["*"])
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        self.delivery(key, on["id"], ev["id"], lambda d: d["status"] == "delivered", "delivered")
        self.assertEqual(self.deliveries(key, only_failed["id"]), [])
        self.assertEqual(self.deliveries(key, off["id"]), [])
        self.assertEqual(len(self.recv.received(ev["id"])), 1)

    def test_500_then_200_is_retried(self):
        key = self.org()
        ep = self.endpoint(key)
        self.recv.script = [(500, 0)]
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        first = self.delivery(key, ep["id"], ev["id"], lambda d: d["attempts"] >= 1 and
                              d["status"] == "pending", "first attempt failed", timeout=30)
        self.assertEqual(first["last_status_code"], 500)
        self.assertIn("500", first["last_error"])
        self.assertRegex(first["next_attempt_at"], TS_RE)
        d = self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                          "delivered on the retry", timeout=30)
        self.assertEqual(d["attempts"], 2)
        got = self.recv.received(ev["id"])
        self.assertEqual(len(got), 2)
        self.assertGreaterEqual(got[1]["at"] - got[0]["at"], 4.0, "the retry waits about 5 s")
        self.assertEqual(got[0]["body"], got[1]["body"])

    @slow
    def test_timeout_is_retried(self):
        key = self.org()
        ep = self.endpoint(key)
        self.recv.script = [(200, 3)]  # answers after the 1 s timeout of this server
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        first = self.delivery(key, ep["id"], ev["id"], lambda d: d["attempts"] >= 1 and
                              d["last_error"], "first attempt timed out", timeout=30)
        self.assertIsNone(first["last_status_code"])
        self.assertIn("timed out", first["last_error"])
        self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                      "delivered on the retry", timeout=30)

    def test_redeliver(self):
        key = self.org()
        ep = self.endpoint(key)
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered", "delivered")
        r = self.assertJson(self.server.post("/v1/events/%s/redeliver" % ev["id"], {}, key=key))
        self.assertEqual([d["event_id"] for d in r["deliveries"]], [ev["id"]])
        self.poll(lambda: len(self.recv.received(ev["id"])) == 2, "delivered again", timeout=30)
        d = self.delivery(key, ep["id"], ev["id"], lambda d: d["attempts"] == 2 and
                          d["status"] == "delivered", "second attempt recorded")
        self.assertEqual(d["last_status_code"], 200)
        self.assertError(self.server.post("/v1/events/%s/redeliver" % NO_EVENT, {}, key=key),
                         404, "event_not_found", "id")
        self.assertError(self.server.post("/v1/events/%s/redeliver" % ev["id"],
                                          {"endpoint_id": NO_ENDPOINT}, key=key), 404,
                         "webhook_endpoint_not_found", "endpoint_id")

    def test_redeliver_is_bounded(self):
        # Issue 26: each call made one POST per endpoint, without limit. A delivery is attempted
        # at most 10 times within an hour, retries included; the 11th is refused with 429.
        key = self.org()
        a = self.endpoint(key)
        b = self.endpoint(key)
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        for ep in (a, b):
            self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                          "delivered to %s" % ep["id"])

        def attempts(ep):
            return self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                                 "delivered")["attempts"]

        for n in range(2, 11):  # attempts 2..10 to a, each asked once it was delivered
            self.assertJson(self.server.post("/v1/events/%s/redeliver" % ev["id"],
                                             {"endpoint_id": a["id"]}, key=key))
            self.poll(lambda: attempts(a) == n, "attempt %d to a" % n, timeout=30)
        r = self.server.post("/v1/events/%s/redeliver" % ev["id"], {"endpoint_id": a["id"]},
                             key=key)
        err = self.assertError(r, 429, "rate_limit_exceeded")
        self.assertIn("10 times", err["message"])
        self.assertTrue(1 <= int(r.header("Retry-After")) <= 3600, r.headers)
        # the whole fan-out is refused too (it would reach a); b alone is not
        self.assertError(self.server.post("/v1/events/%s/redeliver" % ev["id"], {}, key=key),
                         429, "rate_limit_exceeded")
        self.assertJson(self.server.post("/v1/events/%s/redeliver" % ev["id"],
                                         {"endpoint_id": b["id"]}, key=key))
        self.poll(lambda: attempts(b) == 2, "b delivered again", timeout=30)
        self.assertEqual(attempts(a), 10)
        self.assertEqual(len([g for g in self.recv.received(ev["id"])]), 12)

    def test_second_rotation_keeps_the_first_secret_its_day(self):
        # Issue 26: a second rotate_secret dropped the original secret at once. Every replaced
        # secret signs for its own 24 hours; at most four are kept.
        key = self.org()
        ep = self.endpoint(key, events=["task.completed"])
        secrets = [ep["secret"]]

        def rotate():
            rot = self.assertJson(self.server.post(
                "/v1/webhook_endpoints/%s/rotate_secret" % ep["id"], {}, key=key))
            self.assertRegex(rot["secret"], SECRET_RE)
            secrets.append(rot["secret"])

        def signatures(ev_id, nth):
            self.poll(lambda: len(self.recv.received(ev_id)) > nth, "delivery %d" % nth,
                      timeout=30)
            g = self.recv.received(ev_id)[nth]
            h = g["headers"]
            return h, g["body"], h["webhook-signature"].split(" ")

        rotate()
        rotate()
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        h, body, sigs = signatures(ev["id"], 0)
        ts = h["webhook-timestamp"]
        self.assertEqual(sigs, [sign(s, ev["id"], ts, body) for s in reversed(secrets)])
        # a receiver that still holds any of the three verifies it (the reference library)
        heads = {k: h[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
        res = node_verify([{"secret": s, "headers": heads, "body": body} for s in secrets])
        self.assertEqual([x["ok"] for x in res], [True, True, True], res)
        # four rotations more: the current secret and the four replaced last; the oldest two
        # are retired
        for _ in range(4):
            rotate()
        self.assertJson(self.server.post("/v1/events/%s/redeliver" % ev["id"], {}, key=key))
        h, body, sigs = signatures(ev["id"], 1)
        self.assertEqual(sigs, [sign(s, ev["id"], h["webhook-timestamp"], body)
                                for s in reversed(secrets[2:])])

    @slow
    def test_slow_receiver_does_not_slow_the_api(self):
        key = self.org()
        ep = self.endpoint(key)
        # every delivery thread (4) is held by a receiver that answers after the 1 s timeout
        self.recv.script = [(200, 2)] * 6  # the first attempt of each of the 6 deliveries
        tasks = [self.task_done(key) for _ in range(6)]
        self.poll(lambda: len(self.recv.received()) >= 4, "deliveries under way", timeout=30)
        worst = 0.0
        for _ in range(20):
            t0 = time.monotonic()
            self.assertJson(self.server.get("/v1/events?limit=5", key=key))
            worst = max(worst, time.monotonic() - t0)
        self.assertLess(worst, 0.5, "an API call waited for the webhook receiver")
        for t in tasks:
            ev = self.event_of(key, "task.completed", t["id"])
            self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                          "delivered in the end", timeout=60)


@slow
class RestartTest(HooksCase):
    single_node = True

    def test_restart_between_attempts_loses_nothing(self):
        key = self.org()
        ep = self.endpoint(key)
        self.recv.script = [(500, 0)]
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        self.delivery(key, ep["id"], ev["id"], lambda d: d["attempts"] == 1 and
                      d["status"] == "pending", "first attempt failed")
        self.assertEqual(self.server.stop(), 0)
        self.server.start()
        d = self.delivery(key, ep["id"], ev["id"], lambda d: d["status"] == "delivered",
                          "delivered after the restart", timeout=30)
        self.assertEqual(d["attempts"], 2)
        self.assertEqual(len(self.recv.received(ev["id"])), 2)


class PrivateRefusedTest(HooksCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_loopback_receiver_is_refused(self):
        key = self.org()
        ep = self.endpoint(key)  # accepted: the address is judged at delivery time
        t = self.task_done(key)
        ev = self.event_of(key, "task.completed", t["id"])
        d = self.delivery(key, ep["id"], ev["id"], lambda d: d["attempts"] >= 1 and
                          d["last_error"], "attempt refused")
        self.assertIsNone(d["last_status_code"])
        self.assertIn("127.0.0.1", d["last_error"])
        self.assertIn("loopback", d["last_error"])
        self.assertEqual(self.recv.received(), [])


if __name__ == "__main__":
    unittest.main()
