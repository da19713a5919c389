# SPDX-License-Identifier: MIT
"""A chat stream read by a real EventSource client: the npm `eventsource` package (4.1.1,
node_modules) driven by tests/http/test_eventsource.js."""

import json
import os
import shutil
import subprocess
import unittest

from chatlib import ChatTestCase, MockChatTestCase, credits_for, uniq
from harness import REPO_ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "test_eventsource.js")
ES_DIR = os.path.join(REPO_ROOT, "node_modules", "eventsource")


def es_missing():
    if not os.path.exists(os.path.join(ES_DIR, "package.json")):
        return "node_modules/eventsource is not installed (run npm ci)"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


class EventSourceMixin:

    def run_es(self, key, body, path="/v1/chat/stream", timeout_ms=20000):
        env = dict(os.environ, WF_URL=self.server.base_url, WF_KEY=key,
                   WF_BODY=json.dumps(body), WF_PATH=path, WF_TIMEOUT_MS=str(timeout_ms))
        p = subprocess.run(["node", SCRIPT], env=env, capture_output=True, text=True,
                           timeout=timeout_ms / 1000 + 15, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        self.assertTrue(lines, p.stderr)
        return json.loads(lines[-1])

    def checkEvents(self, out):
        self.assertIsNone(out["error"], out)
        self.assertTrue(out["opened"])
        self.assertEqual(out["requests"], 1, "EventSource reconnected")
        ev = out["events"]
        names = [e["type"] for e in ev]
        self.assertEqual(names[0], "message.created", names)
        self.assertEqual(names[-1], "message.completed", names)
        self.assertGreaterEqual(len(names), 3)
        self.assertEqual(set(names[1:-1]), {"message.delta"}, names)
        self.assertEqual([e["id"] for e in ev], [str(i) for i in range(1, len(ev) + 1)])
        data = [json.loads(e["data"]) for e in ev]
        created, done = data[0], data[-1]
        self.assertEqual(done["id"], created["id"])
        self.assertEqual("".join(d["delta"] for d in data[1:-1]), done["content"])
        self.assertTrue(done["content"])
        self.assertEqual(done["credits_used"], credits_for(done["usage"]))
        return done


@unittest.skipIf(es_missing(), es_missing() or "")
class EventSourceBuiltinTest(EventSourceMixin, ChatTestCase):

    @classmethod
    def setUpServer(cls):
        cls.live = cls.server.create_key("es", credits=1000)

    def test_stream(self):
        emp = self.employee(self.live, "starter")
        done = self.checkEvents(self.run_es(self.live, {"employee_id": emp,
                                                        "message": "Hello from EventSource"}))
        conv = self.conversation(self.live, done["conversation_id"])
        self.assertEqual(conv["messages"][-1]["content"], done["content"])
        self.assertEqual(conv["messages"][-1]["id"], done["id"])

    def test_stream_true_on_chat(self):
        emp = self.employee(self.live, "starter")
        self.checkEvents(self.run_es(self.live, {"employee_id": emp, "message": "Flag",
                                                 "stream": True}, path="/v1/chat"))

    def test_error_before_stream(self):
        out = self.run_es(self.live, {"employee_id": "emp_" + "Z" * 24, "message": "nobody"})
        self.assertEqual(out["events"], [])
        self.assertIsNotNone(out["error"])
        self.assertEqual(out["error"]["code"], 404, out)


@unittest.skipIf(es_missing(), es_missing() or "")
class EventSourceMockTest(EventSourceMixin, MockChatTestCase):

    @classmethod
    def setUpServer(cls):
        cls.live = cls.server.create_key("es-mock", credits=1000)

    def test_stream(self):
        emp = self.employee(self.live, "starter")
        msg = uniq("via EventSource [[slow:20]]")
        done = self.checkEvents(self.run_es(self.live, {"employee_id": emp, "message": msg}))
        self.assertEqual(done["content"], self.mock_requests(msg)[0]["reply"]["content"])

    def test_error_event(self):
        emp = self.employee(self.live, "starter")
        out = self.run_es(self.live, {"employee_id": emp, "message": uniq("[[cut]] es")})
        self.assertIsNone(out["error"], out)
        names = [e["type"] for e in out["events"]]
        self.assertEqual(names[-1], "error", names)
        self.assertNotIn("message.completed", names)
        self.assertEqual(json.loads(out["events"][-1]["data"])["error"]["code"], "upstream_error")
        self.assertEqual([e["id"] for e in out["events"]],
                         [str(i) for i in range(1, len(out["events"]) + 1)])


if __name__ == "__main__":
    unittest.main()
