# SPDX-License-Identifier: MIT
"""Large conversations (hardening finding 3), black-box.

A conversation of 1,202 messages of 32,000 characters (the probe's) is made by one chat through
the API and rows written into the test's own SQLite database while the server is stopped (the
API would take minutes to make them; the server reads them exactly as its own).
- GET /v1/conversations/{id} answers 200 with valid JSON holding every message in order, and
  the server's memory does not grow with the size of the answer (it is streamed);
- GET /v1/conversations/{id}/messages pages through every message once, newest first, with
  `limit` and `before`; bad values are 400 with their `param`; another organization gets 404;
- a client reading the big answer slowly does not hold up another tenant's requests.
"""

import json
import os
import socket
import sqlite3
import time
import uuid

from harness import GENEROUS_LIMITS, ServerTestCase, sqlite_only

N_MSG = 1202
MSG_CHARS = 32000


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@sqlite_only("the test writes its rows into the SQLite file")
class LargeConversationTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    @classmethod
    def setUpServer(cls):
        srv = cls.server
        cls.key = srv.create_key("big-" + uuid.uuid4().hex[:6], credits=100000)
        cls.other = srv.create_key("other-" + uuid.uuid4().hex[:6], credits=100)
        emp = srv.get("/v1/employees?limit=1", key=cls.key).json["employees"][0]["id"]
        r = srv.post("/v1/chat", {"employee_id": emp, "message": "hello"}, key=cls.key)
        assert r.status == 200, r
        cls.conv = r.json["conversation_id"]
        assert srv.stop() == 0
        db = sqlite3.connect(srv.db)
        org, mode, emp_id, t0 = db.execute(
            "SELECT org_id, mode, employee_id, created_at FROM conversations WHERE id = ?",
            (cls.conv,)).fetchone()
        base = db.execute("SELECT max(seq) FROM messages WHERE conversation_id = ?",
                          (cls.conv,)).fetchone()[0]
        rows = []
        for i in range(N_MSG):
            role = "user" if i % 2 == 0 else "assistant"
            content = ("m%05d " % i) + ("\u00e9\u4e00" * MSG_CHARS)[:MSG_CHARS - 7]
            rows.append(("msg_big%017d" % i, cls.conv, org, mode, emp_id, role, content,
                         "[]" if role == "assistant" else None, 0, 0, 0, None, t0 + 1 + i,
                         base + 1 + i))
        db.executemany("INSERT INTO messages (id, conversation_id, org_id, mode, employee_id,"
                       " role, content, sources, credits_used, input_tokens, output_tokens,"
                       " response_ms, created_at, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       rows)
        db.execute("UPDATE conversations SET message_count = message_count + ? WHERE id = ?",
                   (N_MSG, cls.conv))
        db.commit()
        db.close()
        cls.total = base + N_MSG
        srv.start()

    def test_whole_conversation_streams_with_bounded_memory(self):
        pid = self.server.proc.pid
        r = self.server.get("/v1/conversations/" + self.conv, key=self.key, timeout=120)
        self.assertEqual(r.status, 200, r)
        body = json.loads(r.body.decode("utf-8"))
        self.assertEqual(body["message_count"], self.total)
        self.assertEqual(len(body["messages"]), self.total)
        big = [m for m in body["messages"] if m["id"].startswith("msg_big")]
        self.assertEqual([m["id"] for m in big], ["msg_big%017d" % i for i in range(N_MSG)])
        self.assertTrue(all(len(m["content"]) == MSG_CHARS for m in big))
        size = len(r.body)
        self.assertGreater(size, 40 * 10**6)
        before = rss_kb(pid)
        for _ in range(3):
            r = self.server.get("/v1/conversations/" + self.conv, key=self.key, timeout=120)
            self.assertEqual(r.status, 200)
            self.assertEqual(len(r.body), size)
        grown = rss_kb(pid) - before
        if "san-" in os.path.basename(os.path.dirname(self.server.bin)):
            return  # ASan keeps freed memory in quarantine: RSS says nothing there
        # a built answer would hold its whole size (~96 MB) per read
        self.assertLess(grown * 1024, size // 4, "RSS grew by %d KiB" % grown)

    def test_messages_pages(self):
        seen = []
        path = "/v1/conversations/%s/messages?limit=100" % self.conv
        pages = 0
        while True:
            r = self.server.get(path, key=self.key, timeout=60)
            self.assertEqual(r.status, 200, r)
            page = r.json
            self.assertEqual(set(page), {"messages", "has_more", "next_cursor"})
            self.assertLessEqual(len(page["messages"]), 100)
            seen += page["messages"]
            pages += 1
            if not page["has_more"]:
                self.assertIsNone(page["next_cursor"])
                break
            path = "/v1/conversations/%s/messages?limit=100&before=%s" % (
                self.conv, page["next_cursor"])
        self.assertEqual(len(seen), self.total)
        self.assertEqual(len({m["id"] for m in seen}), self.total)
        big = [m["id"] for m in seen if m["id"].startswith("msg_big")]
        self.assertEqual(big, ["msg_big%017d" % i for i in reversed(range(N_MSG))])
        self.assertEqual(pages, (self.total + 99) // 100)
        # default limit 50; each item is the detail's message object
        r = self.server.get("/v1/conversations/%s/messages" % self.conv, key=self.key)
        self.assertEqual(len(r.json["messages"]), 50)
        m = r.json["messages"][0]
        self.assertLessEqual({"id", "role", "content", "credits_used", "created_at"}, set(m))

    def test_messages_errors(self):
        base = "/v1/conversations/%s/messages" % self.conv
        for q in ("limit=0", "limit=101", "limit=abc", "limit=1e30"):
            with self.subTest(q=q):
                self.assertError(self.server.get(base + "?" + q, key=self.key), 400,
                                 "invalid_request", "limit")
        for c in ("zzz", "MTIz"):
            with self.subTest(before=c):
                self.assertError(self.server.get(base + "?before=" + c, key=self.key), 400,
                                 "invalid_request", "before")
        self.assertError(self.server.get(base + "?x=1", key=self.key), 400, "invalid_request",
                         "x")
        self.assertError(self.server.get(base, key=self.other), 404, "conversation_not_found",
                         {None, "id"})
        self.assertError(self.server.get("/v1/conversations/conv_" + "Z" * 24 + "/messages",
                                         key=self.key), 404, "conversation_not_found",
                         {None, "id"})

    def test_slow_reader_does_not_hold_up_others(self):
        c = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
        try:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.sendall(("GET /v1/conversations/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Authorization: Bearer %s\r\n\r\n" % (self.conv, self.key)).encode())
            self.assertIn(b" 200 ", c.recv(1024))  # started, then not read any further
            worst = 0.0
            for _ in range(30):
                t0 = time.time()
                r = self.server.get("/v1/employees?limit=5", key=self.other, timeout=10)
                worst = max(worst, time.time() - t0)
                self.assertEqual(r.status, 200)
            self.assertLess(worst, 2.0)
        finally:
            c.close()
