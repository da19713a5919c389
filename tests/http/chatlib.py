# SPDX-License-Identifier: MIT
"""Shared helpers of the chat / conversations / idempotency suites (issue 3).

- an SSE client over http.client that reads the stream line by line (events, comments, timing,
  a hook per event that can drop the connection),
- ChatTestCase: a ServerTestCase with chat helpers (employees of a tier, balance, conversation
  lookup, Message checks),
- MockChatTestCase: the same with tests/mock/openai_mock.py started in-process and the server
  started with WORKFORCE_LLM=openai pointed at it.
"""

import http.client
import json
import math
import os
import sys
import time
import urllib.parse
import uuid

from harness import GENEROUS_LIMITS, REPO_ROOT, TS_RE, Response, ServerTestCase

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "mock"))
import openai_mock  # noqa: E402

MSG_ID_RE = r"^msg_[A-Za-z0-9]{20,}$"
CONV_ID_RE = r"^conv_[A-Za-z0-9]{20,}$"
# the reference's Message, sources and usage, and the work of the turn (contract §19)
MESSAGE_FIELDS = {"id", "conversation_id", "employee_id", "content", "role", "credits_used",
                  "created_at", "sources", "usage", "status", "stop_reason", "error",
                  "tool_calls"}
CREATED_FIELDS = {"id", "conversation_id", "employee_id", "role", "created_at"}
CONV_ITEM_FIELDS = {"id", "employee_id", "title", "message_count", "created_at", "updated_at"}
CONV_LIST_FIELDS = {"conversations", "has_more", "next_cursor"}
FEEDBACK_FIELDS = {"message_id", "conversation_id", "rating", "comment", "created_at"}
MOCK_MODEL = "mock-1"
MOCK_API_KEY = "sk-mock-test-0123456789"


def credits_for(usage):
    """The contract's price of one model call."""
    return max(1, math.ceil((usage["input_tokens"] + usage["output_tokens"]) / 1000))


class AnyParam(frozenset):
    """For assertError: 'param' may be anything (or absent) where the spec does not say."""

    def __contains__(self, item):
        return True


ANY_PARAM = AnyParam()


def uniq(prefix="m"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


# ---- SSE ----

class SSEResult:
    def __init__(self, status, headers):
        self.status = status
        self.headers = headers
        self.events = []      # {"id", "event", "data", "json", "t"}
        self.comments = []    # (t, line)
        self.lines = []
        self.response = None  # a harness Response when the answer was not an event stream
        self.error = None     # an exception that ended the read (cut stream, timeout)
        self.closed_by_us = False
        self.t0 = time.time()
        self.elapsed = None

    def header(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def names(self):
        return [e["event"] for e in self.events]

    def of(self, name):
        return [e for e in self.events if e["event"] == name]

    def deltas(self):
        return "".join(e["json"]["delta"] for e in self.of("message.delta"))

    def __repr__(self):
        if self.response is not None:
            return "<SSE non-stream %r>" % self.response
        return "<SSE %s events=%s comments=%d error=%r>" % (
            self.status, [(e["id"], e["event"]) for e in self.events], len(self.comments),
            self.error)


def sse_post(server, path, body, key=None, headers=None, timeout=30, on_event=None,
             method="POST"):
    """POST 'body' (dict, serialised; or bytes; None: no body, as a GET) and read the answer
    as an event stream.
    on_event(ev, result) is called per event; returning False drops the connection (the socket
    is shut down, as a client that goes away)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    hdrs = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if key is not None:
        hdrs["Authorization"] = "Bearer " + key
    if headers:
        hdrs.update(headers)
    if body is None:
        data = None
        del hdrs["Content-Type"]
    else:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=hdrs)
    sock = conn.sock
    resp = conn.getresponse()
    res = SSEResult(resp.status, resp.getheaders())
    ct = (resp.getheader("Content-Type") or "").lower()
    if resp.status != 200 or not ct.startswith("text/event-stream"):
        res.response = Response(resp.status, resp.getheaders(), resp.read())
        conn.close()
        res.elapsed = time.time() - res.t0
        return res
    cur, datalines = {}, []
    try:
        while True:
            raw = resp.readline()
            if not raw:
                break
            line = raw.decode("utf-8")
            res.lines.append(line)
            if line.endswith("\r\n"):
                line = line[:-2]
            elif line.endswith("\n") or line.endswith("\r"):
                line = line[:-1]
            if line == "":
                if cur or datalines:
                    ev = {"id": cur.get("id"), "event": cur.get("event", "message"),
                          "data": "\n".join(datalines), "json": None, "t": time.time()}
                    try:
                        ev["json"] = json.loads(ev["data"])
                    except ValueError:
                        pass
                    res.events.append(ev)
                    cur, datalines = {}, []
                    if on_event is not None and on_event(ev, res) is False:
                        res.closed_by_us = True
                        try:
                            sock.shutdown(2)
                        except OSError:
                            pass
                        sock.close()
                        break
                continue
            if line.startswith(":"):
                res.comments.append((time.time(), line))
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                datalines.append(value)
            elif field in ("id", "event", "retry"):
                cur[field] = value
    except (http.client.HTTPException, OSError, ValueError) as e:
        res.error = e
    finally:
        try:
            resp.close()
        except Exception:
            pass
        conn.close()
    res.elapsed = time.time() - res.t0
    return res


# ---- Base classes ----

class ChatTestCase(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    # -- lookups --

    def employees(self, key):
        items, after = [], None
        while True:
            path = "/v1/employees?limit=100" + ("&after=" + after if after else "")
            body = self.assertJson(self.server.get(path, key=key))
            items += body["employees"]
            if not body["has_more"]:
                return items
            after = body["next_cursor"]

    def employee(self, key, tier="starter", index=0):
        """The index-th catalog employee of 'tier' (by the list order), as seen by 'key'."""
        items = [e for e in self.employees(key) if e["tier"] == tier]
        self.assertGreater(len(items), index, "no %s employee #%d in the catalog" % (tier, index))
        return items[index]["id"]

    def new_employee(self, key, **fields):
        body = {"name": fields.pop("name", "Tess " + uuid.uuid4().hex[:6]),
                "role": "Tester", "category": "support"}
        body.update(fields)
        return self.assertJson(self.server.post("/v1/employees", body, key=key))

    def balance(self, key):
        return self.assertJson(self.server.get("/v1/account", key=key))["credits_remaining"]

    def set_credits(self, org, n):
        p = self.server.orgs_update(org, credits=n)
        self.assertEqual(p.returncode, 0, p.stderr)

    def conversation(self, key, cid):
        return self.assertJson(self.server.get("/v1/conversations/" + cid, key=key))

    def conversations(self, key, **query):
        q = urllib.parse.urlencode(query)
        body = self.assertJson(self.server.get("/v1/conversations" + ("?" + q if q else ""),
                                               key=key))
        self.assertEqual(set(body), CONV_LIST_FIELDS, body)
        return body

    def find_conversation(self, key, title, employee_id=None):
        """The conversation titled 'title' (walking the whole list), or None."""
        before = None
        for _ in range(100):
            q = {"limit": 100}
            if employee_id:
                q["employee_id"] = employee_id
            if before:
                q["before"] = before
            body = self.conversations(key, **q)
            for c in body["conversations"]:
                if c["title"] == title:
                    return c
            if not body["has_more"]:
                return None
            before = body["next_cursor"]
        return None

    # -- chat --

    def chat(self, key, employee_id, message, headers=None, **fields):
        body = {"employee_id": employee_id, "message": message}
        body.update(fields)
        return self.server.post("/v1/chat", body, key=key, headers=headers, timeout=60)

    def chat_ok(self, key, employee_id, message, **fields):
        r = self.chat(key, employee_id, message, **fields)
        m = self.assertJson(r, 200)
        self.checkMessage(m, employee_id)
        return m

    def stream(self, key, employee_id, message, path="/v1/chat/stream", headers=None,
               on_event=None, timeout=60, **fields):
        body = {"employee_id": employee_id, "message": message}
        body.update(fields)
        return sse_post(self.server, path, body, key=key, headers=headers, timeout=timeout,
                        on_event=on_event)

    def wait_for(self, fn, timeout=10.0, step=0.1):
        deadline = time.time() + timeout
        while True:
            v = fn()
            if v or time.time() > deadline:
                return v
            time.sleep(step)

    # -- checks --

    def checkMessage(self, m, employee_id=None, conversation_id=None):
        self.assertEqual(set(m), MESSAGE_FIELDS, m)
        self.assertRegex(m["id"], MSG_ID_RE)
        self.assertRegex(m["conversation_id"], CONV_ID_RE)
        if employee_id is not None:
            self.assertEqual(m["employee_id"], employee_id)
        if conversation_id is not None:
            self.assertEqual(m["conversation_id"], conversation_id)
        self.assertEqual(m["role"], "assistant")
        self.assertIsInstance(m["content"], str)
        self.assertTrue(m["content"], "empty reply")
        self.assertRegex(m["created_at"], TS_RE)
        self.assertEqual(m["sources"], [])
        self.assertEqual(set(m["usage"]), {"input_tokens", "output_tokens"}, m)
        for k in ("input_tokens", "output_tokens"):
            self.assertIsInstance(m["usage"][k], int)
            self.assertNotIsInstance(m["usage"][k], bool)
            self.assertGreaterEqual(m["usage"][k], 0)
        self.assertIsInstance(m["credits_used"], int)

    def checkStream(self, res, employee_id=None):
        """A successful event stream: headers, created, delta+, completed, ids 1..N.
        Returns the completed Message."""
        self.assertIsNone(res.response, res)
        self.assertEqual(res.status, 200, res)
        self.assertTrue(res.header("Content-Type", "").lower().startswith("text/event-stream"),
                        res.headers)
        self.assertEqual(res.header("Cache-Control"), "no-cache")
        self.assertEqual(res.header("X-Accel-Buffering"), "no")
        self.assertRegex(res.header("X-Request-Id", ""), r"^[A-Za-z0-9._-]{1,128}$")
        self.assertIsNotNone(res.header("X-RateLimit-Limit"), res.headers)
        names = res.names()
        self.assertGreaterEqual(len(names), 3, res)
        self.assertEqual(names[0], "message.created", res)
        self.assertEqual(names[-1], "message.completed", res)
        self.assertEqual(set(names[1:-1]), {"message.delta"}, res)
        self.assertEqual([e["id"] for e in res.events],
                         [str(i) for i in range(1, len(res.events) + 1)], res)
        for e in res.events:
            self.assertIsNotNone(e["json"], "data is not JSON: %r" % e["data"])
        created = res.events[0]["json"]
        self.assertEqual(set(created), CREATED_FIELDS, created)
        self.assertEqual(created["role"], "assistant")
        self.assertRegex(created["id"], MSG_ID_RE)
        self.assertRegex(created["conversation_id"], CONV_ID_RE)
        self.assertRegex(created["created_at"], TS_RE)
        if employee_id is not None:
            self.assertEqual(created["employee_id"], employee_id)
        for e in res.of("message.delta"):
            self.assertEqual(set(e["json"]), {"id", "delta"}, e)
            self.assertEqual(e["json"]["id"], created["id"])
            self.assertIsInstance(e["json"]["delta"], str)
        done = res.events[-1]["json"]
        self.checkMessage(done, employee_id)
        self.assertEqual(done["id"], created["id"])
        self.assertEqual(done["conversation_id"], created["conversation_id"])
        self.assertEqual(res.deltas(), done["content"], "the deltas do not join to content")
        self.assertIsNone(res.error, res)
        return done

    def checkStreamError(self, res, code="upstream_error"):
        """A stream that ended with an `error` event instead of message.completed."""
        self.assertIsNone(res.response, res)
        self.assertEqual(res.status, 200, res)
        names = res.names()
        self.assertTrue(names, res)
        self.assertEqual(names[-1], "error", res)
        self.assertNotIn("message.completed", names, res)
        if "message.created" in names:
            self.assertEqual(names[0], "message.created", res)
        self.assertEqual([e["id"] for e in res.events],
                         [str(i) for i in range(1, len(res.events) + 1)], res)
        err = res.events[-1]["json"]
        self.assertIsInstance(err, dict, res.events[-1])
        self.assertEqual(set(err), {"error"}, err)
        self.assertEqual(err["error"].get("code"), code, err)
        self.assertIsInstance(err["error"].get("message"), str)
        self.assertTrue(err["error"]["message"])
        return err

    def assertJsonError(self, r, status, code, param=None):
        """assertError for an SSE helper result or a Response."""
        if isinstance(r, SSEResult):
            self.assertIsNotNone(r.response, "expected a JSON error, got a stream: %r" % r)
            r = r.response
        return self.assertError(r, status, code, param)


class MockChatTestCase(ChatTestCase):
    """A server with WORKFORCE_LLM=openai in front of an in-process openai_mock."""

    mock_env = {}
    mock = None

    @classmethod
    def setUpClass(cls):
        cls.mock = openai_mock.MockLLM().start()
        env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS, "WORKFORCE_LLM": "openai",
               "WORKFORCE_LLM_BASE_URL": cls.mock.base_url,
               "WORKFORCE_LLM_MODEL": MOCK_MODEL, "WORKFORCE_LLM_API_KEY": MOCK_API_KEY}
        env.update(cls.mock_env)
        cls.server_env = env
        try:
            super().setUpClass()
        except BaseException:
            cls.mock.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.mock.stop()

    def mock_requests(self, last_user=None):
        reqs = self.mock.requests()
        if last_user is not None:
            reqs = [r for r in reqs if r["last_user"] == last_user]
        return reqs
