# SPDX-License-Identifier: MIT
"""Conversations (issue 3): list (newest activity first, `before` keyset cursor, employee filter,
limit), read with messages oldest first, delete, feedback on assistant messages, and the
employee statistics that chat and feedback feed."""

import time
import unittest

from chatlib import (ANY_PARAM, CONV_ID_RE, CONV_ITEM_FIELDS, FEEDBACK_FIELDS, MSG_ID_RE,
                     ChatTestCase, MockChatTestCase, uniq)
from harness import ID_PARAM, TS_RE, next_millisecond, parse_ts

NO_CONV = "conv_" + "Z" * 24
NO_MSG = "msg_" + "Z" * 24


class ConversationsBase(ChatTestCase):

    def new_chat(self, key, emp, msg=None, **kw):
        return self.chat_ok(key, emp, msg or uniq("hello"), **kw)

    def walk(self, key, limit, **query):
        """All pages newest first with 'limit'; checks page invariants; returns the items."""
        items, before, sizes = [], None, []
        for _ in range(200):
            q = dict(query, limit=limit)
            if before is not None:
                q["before"] = before
            body = self.conversations(key, **q)
            page = body["conversations"]
            sizes.append(len(page))
            self.assertLessEqual(len(page), limit)
            items += page
            if body["has_more"]:
                self.assertIsInstance(body["next_cursor"], str)
                self.assertTrue(body["next_cursor"])
                self.assertEqual(len(page), limit)
                before = body["next_cursor"]
            else:
                self.assertIsNone(body["next_cursor"])
                return items, sizes
        self.fail("pagination does not end")

    def checkItem(self, c):
        self.assertEqual(set(c), CONV_ITEM_FIELDS, c)
        self.assertRegex(c["id"], CONV_ID_RE)
        self.assertIsInstance(c["title"], str)
        self.assertIsInstance(c["message_count"], int)
        self.assertRegex(c["created_at"], TS_RE)
        self.assertRegex(c["updated_at"], TS_RE)
        self.assertLessEqual(parse_ts(c["created_at"]), parse_ts(c["updated_at"]))

    def feedback(self, key, cid, mid, body):
        return self.server.post("/v1/conversations/%s/messages/%s/feedback" % (cid, mid), body,
                                key=key)


class ConversationsTest(ConversationsBase):

    @classmethod
    def setUpServer(cls):
        s = cls.server
        cls.live = s.create_key("cv", credits=100000)
        cls.test = s.create_key("cv", mode="test")
        cls.other = s.create_key("cv-o", credits=1000)

    def setUp(self):
        self.emp = self.employee(self.live, "starter")
        self.emp2 = self.employee(self.live, "starter", 1)

    # -- list --

    def test_list_order_newest_activity_first(self):
        key = self.server.create_key("cv-order", credits=1000)
        emp = self.employee(key, "starter")
        self.assertEqual(self.conversations(key),
                         {"conversations": [], "has_more": False, "next_cursor": None})
        c = []
        for i in range(3):
            c.append(self.new_chat(key, emp, "Conversation %d" % i)["conversation_id"])
            next_millisecond()
        body = self.conversations(key)
        self.assertEqual([x["id"] for x in body["conversations"]], [c[2], c[1], c[0]])
        self.assertFalse(body["has_more"])
        self.assertIsNone(body["next_cursor"])
        for x in body["conversations"]:
            self.checkItem(x)
            self.assertEqual(x["employee_id"], emp)
            self.assertEqual(x["message_count"], 2)
        self.assertEqual([x["title"] for x in body["conversations"]],
                         ["Conversation 2", "Conversation 1", "Conversation 0"])
        before = {x["id"]: x for x in body["conversations"]}
        self.new_chat(key, emp, "More on the first", conversation_id=c[0])
        body = self.conversations(key)
        self.assertEqual([x["id"] for x in body["conversations"]], [c[0], c[2], c[1]])
        first = body["conversations"][0]
        self.assertEqual(first["message_count"], 4)
        self.assertEqual(first["created_at"], before[c[0]]["created_at"])
        self.assertGreater(parse_ts(first["updated_at"]), parse_ts(before[c[0]]["updated_at"]))
        self.assertGreaterEqual(parse_ts(first["updated_at"]),
                                parse_ts(body["conversations"][1]["updated_at"]))

    def test_before_cursor_walk_and_filter(self):
        key = self.server.create_key("cv-walk", mode="test")
        a = self.employee(key, "starter")
        b = self.employee(key, "starter", 1)
        made = []
        for i in range(7):
            made.append((self.new_chat(key, a if i % 2 == 0 else b, "walk %d" % i)
                         ["conversation_id"], a if i % 2 == 0 else b))
            next_millisecond()
        newest_first = [cid for cid, _ in reversed(made)]
        items, sizes = self.walk(key, 3)
        self.assertEqual(sizes, [3, 3, 1])
        self.assertEqual([x["id"] for x in items], newest_first)
        items, sizes = self.walk(key, 7)
        self.assertEqual(sizes, [7], "a full last page must say has_more false")
        items, sizes = self.walk(key, 1)
        self.assertEqual([x["id"] for x in items], newest_first)
        for emp in (a, b):
            with self.subTest(employee=emp):
                mine = [cid for cid, e in reversed(made) if e == emp]
                items, sizes = self.walk(key, 2, employee_id=emp)
                self.assertEqual([x["id"] for x in items], mine)
                self.assertTrue(all(x["employee_id"] == emp for x in items))
        self.assertError(self.server.get("/v1/conversations?employee_id=emp_" + "Z" * 24,
                                         key=key), 404, "employee_not_found", "employee_id")
        # keyset: new activity during a walk neither repeats nor skips the rest
        p1 = self.conversations(key, limit=3)
        self.new_chat(key, a, "walk new")
        rest, _ = self.walk_from(key, p1["next_cursor"], 3)
        self.assertEqual([x["id"] for x in p1["conversations"] + rest], newest_first)

    def walk_from(self, key, before, limit):
        items, sizes = [], []
        while before:
            body = self.conversations(key, limit=limit, before=before)
            items += body["conversations"]
            sizes.append(len(body["conversations"]))
            before = body["next_cursor"] if body["has_more"] else None
        return items, sizes

    def test_default_limit(self):
        key = self.server.create_key("cv-many", mode="test")
        emp = self.employee(key, "starter")
        for i in range(21):
            self.new_chat(key, emp, "many %d" % i)
        body = self.conversations(key)
        self.assertEqual(len(body["conversations"]), 20)
        self.assertTrue(body["has_more"])
        rest = self.conversations(key, before=body["next_cursor"])
        self.assertEqual(len(rest["conversations"]), 1)
        self.assertFalse(rest["has_more"])
        self.assertEqual(len(self.conversations(key, limit=100)["conversations"]), 21)

    def test_list_validation(self):
        for v in ("0", "101", "-1", "abc", "1.5", "", "1e2", "+5"):
            with self.subTest(limit=v):
                r = self.server.get("/v1/conversations?limit=" + v, key=self.live)
                self.assertError(r, 400, "invalid_request", "limit")
        for v in ("1", "100"):
            with self.subTest(limit=v):
                self.conversations(self.live, limit=v)
        r = self.server.get("/v1/conversations?before=not-a-cursor", key=self.live)
        self.assertError(r, 400, "invalid_request", "before")
        r = self.server.get("/v1/conversations?foo=1", key=self.live)
        self.assertError(r, 400, "invalid_request", "foo")
        r = self.server.get("/v1/conversations?limit=1&limit=2", key=self.live)
        self.assertError(r, 400, "invalid_request", "limit")

    def test_list_is_per_tenant_and_mode(self):
        mine = self.new_chat(self.live, self.emp)["conversation_id"]
        sandbox = self.new_chat(self.test, self.employee(self.test, "starter"))["conversation_id"]
        theirs = self.new_chat(self.other, self.employee(self.other, "starter"))["conversation_id"]
        ids = lambda k: {x["id"] for x in self.walk(k, 100)[0]}
        self.assertIn(mine, ids(self.live))
        self.assertNotIn(sandbox, ids(self.live))
        self.assertNotIn(theirs, ids(self.live))
        self.assertEqual(ids(self.test) & ids(self.live), set())
        self.assertIn(sandbox, ids(self.test))

    # -- read --

    def test_read_messages_oldest_first(self):
        m1 = self.new_chat(self.live, self.emp, "One")
        cid = m1["conversation_id"]
        next_millisecond()
        m2 = self.new_chat(self.live, self.emp, "Two", conversation_id=cid)
        conv = self.conversation(self.live, cid)
        self.assertEqual(set(conv), CONV_ITEM_FIELDS | {"messages"}, conv)
        self.checkItem({k: conv[k] for k in CONV_ITEM_FIELDS})
        self.assertEqual(conv["id"], cid)
        self.assertEqual(conv["employee_id"], self.emp)
        self.assertEqual(conv["title"], "One")
        self.assertEqual(conv["message_count"], 4)
        msgs = conv["messages"]
        self.assertEqual([(x["role"], x["content"]) for x in msgs],
                         [("user", "One"), ("assistant", m1["content"]),
                          ("user", "Two"), ("assistant", m2["content"])])
        self.assertEqual([msgs[1]["id"], msgs[3]["id"]], [m1["id"], m2["id"]])
        for x in msgs:
            self.assertRegex(x["id"], MSG_ID_RE)
            self.assertRegex(x["created_at"], TS_RE)
            self.assertIsInstance(x["credits_used"], int)
            if x["role"] == "user":
                self.assertEqual(set(x), {"id", "role", "content", "credits_used", "created_at"}, x)
            else:
                self.assertEqual(set(x), {"id", "role", "content", "credits_used", "created_at",
                                          "sources", "status", "stop_reason", "error",
                                          "tool_calls"}, x)
                self.assertEqual(x["sources"], [])
        self.assertEqual(msgs[1]["credits_used"], m1["credits_used"])
        self.assertEqual(len({x["id"] for x in msgs}), 4)
        times = [parse_ts(x["created_at"]) for x in msgs]
        self.assertEqual(times, sorted(times))

    def test_not_found(self):
        sandbox = self.new_chat(self.test, self.employee(self.test, "starter"))["conversation_id"]
        theirs = self.new_chat(self.other, self.employee(self.other, "starter"))["conversation_id"]
        for cid in (NO_CONV, "x", sandbox, theirs):
            with self.subTest(cid=cid):
                self.assertError(self.server.get("/v1/conversations/" + cid, key=self.live),
                                 404, "conversation_not_found", ID_PARAM)
                self.assertError(self.server.request("DELETE", "/v1/conversations/" + cid,
                                                     key=self.live),
                                 404, "conversation_not_found", ID_PARAM)
        # the owners still have them
        self.assertEqual(self.conversation(self.other, theirs)["message_count"], 2)
        self.assertEqual(self.conversation(self.test, sandbox)["message_count"], 2)

    # -- delete --

    def test_delete(self):
        m = self.new_chat(self.live, self.emp)
        cid = m["conversation_id"]
        r = self.server.request("DELETE", "/v1/conversations/" + cid, key=self.live)
        self.assertEqual(self.assertJson(r), {"id": cid, "deleted": True})
        self.assertError(self.server.get("/v1/conversations/" + cid, key=self.live),
                         404, "conversation_not_found", ID_PARAM)
        self.assertError(self.server.request("DELETE", "/v1/conversations/" + cid, key=self.live),
                         404, "conversation_not_found", ID_PARAM)
        self.assertNotIn(cid, [x["id"] for x in self.walk(self.live, 100)[0]])
        r = self.chat(self.live, self.emp, "still there?", conversation_id=cid)
        self.assertError(r, 404, "conversation_not_found", "conversation_id")
        r = self.feedback(self.live, cid, m["id"], {"rating": 5})
        self.assertError(r, 404, "conversation_not_found", ANY_PARAM)

    # -- feedback --

    def test_feedback(self):
        m = self.new_chat(self.live, self.emp, "Rate me")
        cid, mid = m["conversation_id"], m["id"]
        r = self.feedback(self.live, cid, mid, {"rating": 5, "comment": "Great answer"})
        fb = self.assertJson(r)
        self.assertEqual(set(fb), FEEDBACK_FIELDS, fb)
        self.assertEqual((fb["message_id"], fb["conversation_id"], fb["rating"], fb["comment"]),
                         (mid, cid, 5, "Great answer"))
        self.assertRegex(fb["created_at"], TS_RE)
        fb = self.assertJson(self.feedback(self.live, cid, mid, {"rating": 1}))
        self.assertEqual(fb["rating"], 1)
        self.assertIsNone(fb["comment"])
        for rating in (1, 2, 3, 4, 5):
            with self.subTest(rating=rating):
                fb = self.assertJson(self.feedback(self.live, cid, mid,
                                                   {"rating": rating, "comment": "c" * 2000}))
                self.assertEqual(fb["rating"], rating)

    def test_feedback_validation(self):
        m = self.new_chat(self.live, self.emp, "Validate my feedback")
        cid, mid = m["conversation_id"], m["id"]
        for body, param in (({"rating": 0}, "rating"), ({"rating": 6}, "rating"),
                            ({"rating": -1}, "rating"), ({"rating": "5"}, "rating"),
                            ({"rating": 4.5}, "rating"), ({"rating": None}, "rating"),
                            ({"rating": True}, "rating"), ({}, "rating"),
                            ({"comment": "no rating"}, "rating"),
                            ({"rating": 3, "comment": 7}, "comment"),
                            ({"rating": 3, "comment": "c" * 2001}, "comment"),
                            ({"rating": 3, "stars": 3}, "stars")):
            with self.subTest(body=str(body)[:60]):
                self.assertError(self.feedback(self.live, cid, mid, body), 400,
                                 "invalid_request", param)
        conv = self.conversation(self.live, cid)
        user_mid = conv["messages"][0]["id"]
        self.assertError(self.feedback(self.live, cid, user_mid, {"rating": 4}), 400,
                         "invalid_request", "message_id")
        self.assertError(self.feedback(self.live, cid, NO_MSG, {"rating": 4}), 404,
                         "message_not_found", ANY_PARAM)
        other = self.new_chat(self.live, self.emp, "Another conversation")
        self.assertError(self.feedback(self.live, cid, other["id"], {"rating": 4}), 404,
                         "message_not_found", ANY_PARAM)
        self.assertError(self.feedback(self.live, NO_CONV, mid, {"rating": 4}), 404,
                         "conversation_not_found", ANY_PARAM)
        # another tenant rating our message: the conversation does not exist for it
        self.assertError(self.feedback(self.other, cid, mid, {"rating": 1}), 404,
                         "conversation_not_found", ANY_PARAM)

    def test_scope(self):
        chat_only = self.server.create_key("cv", scopes="chat")
        m = self.new_chat(chat_only, self.emp)
        self.assertError(self.server.get("/v1/conversations", key=chat_only), 403,
                         "permission_denied")
        self.assertError(self.feedback(chat_only, m["conversation_id"], m["id"], {"rating": 3}),
                         403, "permission_denied")
        self.assertError(self.server.request("DELETE", "/v1/conversations/" + m["conversation_id"],
                                             key=chat_only), 403, "permission_denied")
        convs = self.server.create_key("cv", scopes="conversations")
        self.assertJson(self.feedback(convs, m["conversation_id"], m["id"], {"rating": 3}))


class StatsTest(ConversationsBase, MockChatTestCase):
    """Stats from stored facts: chat through the mock so every reply takes measurable time."""

    @classmethod
    def setUpServer(cls):
        cls.live = cls.server.create_key("st", credits=100000)

    def stats(self, emp, period=None):
        q = "?period=" + period if period else ""
        return self.assertJson(self.server.get("/v1/employees/%s/stats%s" % (emp, q),
                                               key=self.live))

    def detail_stats(self, emp):
        return self.assertJson(self.server.get("/v1/employees/" + emp, key=self.live))["stats"]

    def test_stats_from_chats_and_feedback(self):
        emp = self.new_employee(self.live)["id"]
        other = self.new_employee(self.live)["id"]
        m1 = self.new_chat(self.live, emp, uniq("[[pause:100]] [[slow:40]] [[bigusage]] one"))
        m2 = self.new_chat(self.live, emp, uniq("[[pause:100]] [[slow:40]] two"),
                           conversation_id=m1["conversation_id"])
        res = self.stream(self.live, emp, uniq("[[pause:100]] [[slow:40]] three"))
        m3 = self.checkStream(res, emp)
        self.new_chat(self.live, other, uniq("[[pause:100]] [[slow:40]] elsewhere"))
        self.assertEqual(m1["credits_used"], 3)
        spent = m1["credits_used"] + m2["credits_used"] + m3["credits_used"]
        # a failed reply is not a message and costs nothing
        self.assertError(self.chat(self.live, emp, uniq("[[fail:500]] nope"),
                                   conversation_id=m1["conversation_id"]), 502, "upstream_error")

        # ratings: re-rating replaces
        fb = lambda m, r: self.assertJson(self.feedback(self.live, m["conversation_id"], m["id"],
                                                        {"rating": r}))
        fb(m1, 1)
        fb(m1, 4)
        fb(m3, 5)

        for period in (None, "24h", "7d", "90d"):
            with self.subTest(period=period):
                st = self.stats(emp, period)
                self.assertEqual(st["period"], period or "7d")
                self.assertEqual(st["messages"], 3)
                self.assertEqual(st["conversations"], 2)
                self.assertEqual(st["credits_used"], spent)
                self.assertEqual(st["ratings"], 2)
                self.assertEqual(st["satisfaction_score"], 4.5)
                self.assertGreater(st["avg_response_time_ms"], 0)
                self.assertGreater(st["p95_response_time_ms"], 0)
                self.assertGreaterEqual(st["p95_response_time_ms"], st["avg_response_time_ms"] - 1)
                self.assertEqual(sum(b["messages"] for b in st["series"]), 3)
                self.assertEqual(sum(b["credits_used"] for b in st["series"]), spent)
        d = self.detail_stats(emp)
        self.assertEqual(d["satisfaction_score"], 4.5)
        self.assertGreater(d["avg_response_time_ms"], 0)
        self.assertEqual(self.stats(other)["messages"], 1)
        self.assertEqual(self.stats(other)["ratings"], 0)
        self.assertIsNone(self.stats(other)["satisfaction_score"])
        self.assertIsNone(self.detail_stats(other)["satisfaction_score"])

    def test_response_time_is_measured(self):
        emp = self.new_employee(self.live)["id"]
        self.new_chat(self.live, emp, uniq("[[pause:300]] [[slow:100]] slow reply"))
        st = self.stats(emp)
        # 300 ms before the first token (then 4 gaps of 100 ms): whether the server measures to
        # the first token or to the end, that is at least 300 ms
        self.assertGreaterEqual(st["avg_response_time_ms"], 250)
        self.assertLess(st["avg_response_time_ms"], 30000)
        self.assertGreaterEqual(self.detail_stats(emp)["avg_response_time_ms"], 250)


if __name__ == "__main__":
    unittest.main()
