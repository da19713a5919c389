# SPDX-License-Identifier: MIT
"""Idempotency-Key on POST (issue 3): replay of the first response (blocking and streamed) with
`Idempotent-Replayed: true` and no second piece of work, reuse with another body or path,
a key still in flight, key syntax, scope per organization and mode, 5xx not kept, and
POST /v1/employees."""

import json
import unittest

from chatlib import ANY_PARAM, MockChatTestCase, uniq

NO_EMP = "emp_" + "Z" * 24


class IdempotencyTest(MockChatTestCase):

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.live = s.create_key("idem", credits=100000)
        cls.test = s.create_key("idem", mode="test")
        cls.other = s.create_key("idem-o", credits=100000)

    def setUp(self):
        self.emp = self.employee(self.live, "starter")

    def ik(self, key_value):
        return {"Idempotency-Key": key_value}

    def assertNotReplayed(self, r):
        self.assertIn(r.header("Idempotent-Replayed"), (None, "false"), r.headers)

    def assertReplayOf(self, r2, r1):
        self.assertEqual(r2.status, r1.status)
        self.assertEqual(r2.header("Idempotent-Replayed"), "true", r2.headers)
        self.assertEqual(r2.header("Content-Type"), r1.header("Content-Type"))
        self.assertEqual(r2.body, r1.body, "the replayed body differs from the first")
        self.assertRequestId(r2)

    # -- replay --

    def test_replay_blocking_chat(self):
        k, msg = uniq("idem"), uniq("Pay once")
        b0 = self.balance(self.live)
        r1 = self.chat(self.live, self.emp, msg, headers=self.ik(k))
        m = self.assertJson(r1)
        self.checkMessage(m, self.emp)
        self.assertNotReplayed(r1)
        for _ in range(2):
            r2 = self.chat(self.live, self.emp, msg, headers=self.ik(k))
            self.assertReplayOf(r2, r1)
        self.assertEqual(len(self.mock_requests(msg)), 1, "the replay called the model again")
        self.assertEqual(self.balance(self.live), b0 - m["credits_used"], "charged twice")
        conv = self.conversation(self.live, m["conversation_id"])
        self.assertEqual(conv["message_count"], 2, "the replay stored messages again")
        self.assertEqual(len([c for c in self.walk_titles(self.live) if c == msg]), 1)
        # without the key the same body is new work
        r3 = self.chat(self.live, self.emp, msg)
        self.assertNotReplayed(r3)
        self.assertNotEqual(self.assertJson(r3)["id"], m["id"])

    def walk_titles(self, key):
        out, before = [], None
        while True:
            q = {"limit": 100}
            if before:
                q["before"] = before
            body = self.conversations(key, **q)
            out += [c["title"] for c in body["conversations"]]
            if not body["has_more"]:
                return out
            before = body["next_cursor"]

    def test_reused_with_another_body_or_path(self):
        k, msg = uniq("idem"), uniq("First body")
        r1 = self.chat(self.live, self.emp, msg, headers=self.ik(k))
        self.assertJson(r1)
        other = uniq("Second body")
        r = self.chat(self.live, self.emp, other, headers=self.ik(k))
        self.assertError(r, 400, "idempotency_key_reused", ANY_PARAM)
        self.assertEqual(self.mock_requests(other), [])
        self.assertIsNone(self.find_conversation(self.live, other))
        r = self.server.post("/v1/chat/stream", {"employee_id": self.emp, "message": msg},
                             key=self.live, headers=self.ik(k))
        self.assertError(r, 400, "idempotency_key_reused", ANY_PARAM)
        r = self.server.post("/v1/employees", {"name": "Reuse", "role": "Tester",
                                               "category": "hr"}, key=self.live,
                             headers=self.ik(k))
        self.assertError(r, 400, "idempotency_key_reused", ANY_PARAM)
        self.assertNotIn("Reuse", [e["name"] for e in self.employees(self.live)])
        # the original still replays
        self.assertReplayOf(self.chat(self.live, self.emp, msg, headers=self.ik(k)), r1)

    def test_in_flight_then_stream_replay(self):
        k, msg = uniq("idem"), uniq("[[slow:300]] stream once")
        b0 = self.balance(self.live)
        during = []

        def second(ev, res):
            if ev["event"] == "message.delta" and not during:
                during.append(self.server.post("/v1/chat/stream",
                                               {"employee_id": self.emp, "message": msg},
                                               key=self.live, headers=self.ik(k)))
                during.append(self.chat(self.live, self.emp, msg, headers=self.ik(k),
                                        stream=True))
        first = self.stream(self.live, self.emp, msg, headers=self.ik(k), on_event=second)
        done = self.checkStream(first, self.emp)
        self.assertIn(first.header("Idempotent-Replayed"), (None, "false"))
        self.assertEqual(len(during), 2)
        self.assertError(during[0], 409, "idempotency_key_in_use", ANY_PARAM)
        # another path while in flight: in use or reused, never a second reply
        self.assertIn(during[1].status, (400, 409), during[1])
        self.assertIn(during[1].error["code"], ("idempotency_key_in_use", "idempotency_key_reused"))

        replay = self.stream(self.live, self.emp, msg, headers=self.ik(k))
        self.assertIsNone(replay.response, replay)
        self.assertEqual(replay.status, 200)
        self.assertEqual(replay.header("Idempotent-Replayed"), "true")
        self.assertTrue(replay.header("Content-Type", "").startswith("text/event-stream"))
        strip = lambda res: [(e["id"], e["event"], e["data"]) for e in res.events]
        self.assertEqual(strip(replay), strip(first), "the replay is not the recorded stream")
        self.assertEqual(len(self.mock_requests(msg)), 1)
        self.assertEqual(self.balance(self.live), b0 - done["credits_used"])
        self.assertEqual(self.conversation(self.live, done["conversation_id"])["message_count"], 2)

    def test_key_syntax(self):
        b0 = self.balance(self.live)
        bad = ["", "a" * 256, "cl\u00e9", "cl\u00c3\u00a9", "tab\there"]
        for v in bad:
            with self.subTest(key=repr(v)[:40]):
                msg = uniq("bad key")
                r = self.chat(self.live, self.emp, msg, headers=self.ik(v))
                self.assertError(r, 400, "invalid_request", "Idempotency-Key")
                self.assertEqual(self.mock_requests(msg), [])
                r = self.server.post("/v1/employees", {"name": "Bad key", "role": "Tester",
                                                       "category": "hr"},
                                     key=self.live, headers=self.ik(v))
                self.assertError(r, 400, "invalid_request", "Idempotency-Key")
        self.assertEqual(self.balance(self.live), b0)
        self.assertNotIn("Bad key", [e["name"] for e in self.employees(self.live)])
        for v in ("a" * 255, "!", "~" + uniq("k") + "{}[]()<>@,;:\\\"/?=", "x"):
            with self.subTest(key=v[:40]):
                r = self.chat(self.live, self.emp, uniq("good key"), headers=self.ik(v))
                self.assertJson(r)
                self.assertNotReplayed(r)

    def test_scope_per_organization_and_mode(self):
        k = uniq("shared")
        body_emp_live = self.emp
        msg = uniq("same words")
        r1 = self.chat(self.live, body_emp_live, msg, headers=self.ik(k))
        self.assertJson(r1)
        # another organization, same key and even the same body: its own key space
        other_emp = self.employee(self.other, "starter")
        r2 = self.chat(self.other, other_emp, msg, headers=self.ik(k))
        self.assertJson(r2)
        self.assertNotReplayed(r2)
        self.assertNotEqual(r2.json["id"], r1.json["id"])
        # test mode of the same organization: its own key space
        temp = self.employee(self.test, "starter")
        r3 = self.chat(self.test, temp, msg, headers=self.ik(k))
        self.assertJson(r3)
        self.assertNotReplayed(r3)
        self.assertEqual(r3.json["credits_used"], 0)

    def test_5xx_is_not_kept(self):
        k, msg = uniq("idem"), uniq("[[fail-first:3]] flaky")
        b0 = self.balance(self.live)
        r1 = self.chat(self.live, self.emp, msg, headers=self.ik(k))
        self.assertError(r1, 502, "upstream_error")
        self.assertNotReplayed(r1)
        r2 = self.chat(self.live, self.emp, msg, headers=self.ik(k))
        m = self.assertJson(r2)
        self.assertNotReplayed(r2)
        self.assertEqual(self.mock.attempts(msg), 4)
        r3 = self.chat(self.live, self.emp, msg, headers=self.ik(k))
        self.assertReplayOf(r3, r2)
        self.assertEqual(self.mock.attempts(msg), 4)
        self.assertEqual(self.balance(self.live), b0 - m["credits_used"])

    def test_4xx_first_response_is_replayed(self):
        k = uniq("idem")
        r1 = self.chat(self.live, NO_EMP, "nobody", headers=self.ik(k))
        self.assertError(r1, 404, "employee_not_found", "employee_id")
        self.assertNotReplayed(r1)
        r2 = self.chat(self.live, NO_EMP, "nobody", headers=self.ik(k))
        self.assertReplayOf(r2, r1)
        k = uniq("idem")
        r1 = self.chat(self.live, self.emp, "", headers=self.ik(k))
        self.assertError(r1, 400, "invalid_request", "message")
        self.assertReplayOf(self.chat(self.live, self.emp, "", headers=self.ik(k)), r1)

    def test_create_employee(self):
        k = uniq("idem")
        name = uniq("Idem Ida")
        body = {"name": name, "role": "Recruiter", "category": "hr"}
        r1 = self.server.post("/v1/employees", body, key=self.live, headers=self.ik(k))
        e = self.assertJson(r1)
        self.assertNotReplayed(r1)
        r2 = self.server.post("/v1/employees", body, key=self.live, headers=self.ik(k))
        self.assertReplayOf(r2, r1)
        self.assertEqual(json.loads(r2.body)["id"], e["id"])
        self.assertEqual([x["id"] for x in self.employees(self.live) if x["name"] == name],
                         [e["id"]])
        r3 = self.server.post("/v1/employees", dict(body, role="Other"), key=self.live,
                              headers=self.ik(k))
        self.assertError(r3, 400, "idempotency_key_reused", ANY_PARAM)

    def test_feedback_post(self):
        m = self.chat_ok(self.live, self.emp, uniq("rate"))
        k = uniq("idem")
        path = "/v1/conversations/%s/messages/%s/feedback" % (m["conversation_id"], m["id"])
        r1 = self.server.post(path, {"rating": 4}, key=self.live, headers=self.ik(k))
        self.assertJson(r1)
        r2 = self.server.post(path, {"rating": 4}, key=self.live, headers=self.ik(k))
        self.assertReplayOf(r2, r1)


if __name__ == "__main__":
    unittest.main()
