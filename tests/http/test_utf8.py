# SPDX-License-Identifier: MIT
"""Invalid UTF-8 never reaches storage, and never leaves the server (hardening finding 1).

- Every text form field of the upload (the file name, `name`, `tags`, `employee_ids`) with
  bytes that are not UTF-8 is refused with 400 `invalid_request` and its `param`; a NUL in
  `name` is refused instead of cutting it; nothing is stored.
- A file name longer than 255 bytes is cut at a character boundary, never inside one.
- Whatever is in the database, every answer is valid JSON in valid UTF-8: the test stops the
  server, writes invalid bytes into every free-text column of every table, starts it again and
  reads everything back (lists, details, knowledge query, chat blocking and streamed citing the
  document, the conversation, tasks and their runs).
"""

import json
import sqlite3
import uuid

from harness import GENEROUS_LIMITS, ServerTestCase, sqlite_only
from test_knowledge import DOCS, QUERY, multipart

BAD = b"\xff\xfe"


def raw_multipart(parts):
    """A multipart body from raw header and data bytes: 'parts' are (disposition, data)."""
    b = "wfb" + uuid.uuid4().hex
    out = b""
    for disp, data in parts:
        out += b"--" + b.encode() + b"\r\nContent-Disposition: form-data; " + disp + b"\r\n\r\n"
        out += data + b"\r\n"
    out += b"--" + b.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + b


def strict_json(test, body, what):
    """'body' decodes as UTF-8 (strictly) and parses as JSON; returns the value."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        test.fail("%s: the answer is not UTF-8 (%s): %r" % (what, e, body[:300]))
    try:
        return json.loads(text)
    except ValueError as e:
        test.fail("%s: the answer is not JSON (%s): %r" % (what, e, body[:300]))


class UploadFieldsTest(ServerTestCase):
    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def setUp(self):
        self.key = self.server.create_key("u8-" + uuid.uuid4().hex[:8], credits=1000)

    def post(self, parts):
        body, ctype = raw_multipart(parts)
        return self.server.request("POST", DOCS, body=body, key=self.key, content_type=ctype)

    def assertNothingStored(self):
        r = self.server.get(DOCS, key=self.key)
        self.assertEqual(strict_json(self, r.body, "list")["documents"], [])

    def test_bad_file_name(self):
        for fn in (BAD + b".txt", b"ok\xc3.txt", b"a\xed\xa0\x80b.txt", b"tab\x01.txt"):
            with self.subTest(filename=fn):
                r = self.post([(b'name="file"; filename="' + fn + b'"', b"hello world")])
                self.assertError(r, 400, "invalid_request", "file")
        self.assertNothingStored()

    def test_bad_name_field(self):
        for name in (b"\xff", b"caf\xc3", b"a\x00b"):
            with self.subTest(name=name):
                r = self.post([(b'name="name"', name),
                               (b'name="file"; filename="a.txt"', b"hello world")])
                self.assertError(r, 400, "invalid_request", "name")
        self.assertNothingStored()

    def test_bad_tag_and_employee_id(self):
        for field in (b"tags", b"employee_ids"):
            with self.subTest(field=field):
                r = self.post([(b'name="' + field + b'"', b"x\xffy"),
                               (b'name="file"; filename="a.txt"', b"hello world")])
                self.assertError(r, 400, "invalid_request", field.decode())
        self.assertNothingStored()

    def test_long_name_cut_at_character_boundary(self):
        # 254 ASCII bytes then a 2-byte character: a cut at 255 bytes would split it.
        fn = "a" * 254 + "\u00e9" + "z" * 40 + ".txt"
        body, ctype = multipart([], [("file", fn, "text/plain", b"hello world")])
        r = self.server.request("POST", DOCS, body=body, key=self.key, content_type=ctype)
        doc = strict_json(self, r.body, "upload")
        self.assertEqual(r.status, 200, doc)
        self.assertEqual(doc["filename"], "a" * 254)
        self.assertLessEqual(len(doc["filename"].encode()), 255)
        listed = strict_json(self, self.server.get(DOCS, key=self.key).body, "list")
        self.assertEqual(listed["documents"][0]["filename"], "a" * 254)

    def test_valid_non_ascii_is_kept(self):
        fn = "r\u00e9sum\u00e9 \u6587\u4ef6 \U0001F600.txt"
        body, ctype = multipart([("name", "Caf\u00e9 \u2615"), ("tags", "\u00fcber")],
                                [("file", fn, "text/plain", b"hello world")])
        r = self.server.request("POST", DOCS, body=body, key=self.key, content_type=ctype)
        doc = strict_json(self, r.body, "upload")
        self.assertEqual(r.status, 200, doc)
        self.assertEqual(doc["filename"], fn)
        self.assertEqual(doc["name"], "Caf\u00e9 \u2615")
        self.assertEqual(doc["tags"], ["\u00fcber"])


# Free-text columns: whatever a client or a provider wrote. Ids, enums and timestamps are the
# server's own and are checked where they are written. documents.employee_ids is left whole: it
# is the reader rule, and a damaged one makes the document readable by no employee (fail closed),
# which would keep the chat below from citing it.
TEXT_COLUMNS = {"name", "role", "description", "instructions", "title", "content", "comment",
                "filename", "error", "result", "output", "tags", "capabilities", "sources",
                "model"}


ENUM_COLUMNS = {"messages.role"}


@sqlite_only("the test writes raw bytes into the SQLite file")
class StoredBytesTest(ServerTestCase):
    """Invalid bytes already in the database are never written out as invalid JSON."""

    server_env = {"WORKFORCE_RATE_LIMITS": GENEROUS_LIMITS}

    def test_every_stored_string_goes_out_as_valid_json(self):
        srv = self.server
        key = srv.create_key("u8s-" + uuid.uuid4().hex[:8], tier="manager", credits=100000)
        word = "zqglorbfinch"
        body, ctype = multipart([("name", "Policy"), ("tags", "hr")],
                                [("file", "policy.txt", "text/plain",
                                  ("The %s refund window is thirty days after a return."
                                   % word).encode())])
        doc = strict_json(self, srv.request("POST", DOCS, body=body, key=key,
                                            content_type=ctype).body, "upload")
        self.poll(lambda: strict_json(self, srv.get(DOCS + "/" + doc["id"], key=key).body,
                                      "doc")["status"] == "ready", "document ready")
        emp = strict_json(self, srv.get("/v1/employees?limit=1", key=key).body,
                          "employees")["employees"][0]["id"]
        chat = strict_json(self, srv.post("/v1/chat", {"employee_id": emp,
                                                       "message": "What is the %s?" % word},
                                          key=key).body, "chat")
        conv = chat["conversation_id"]
        task = strict_json(self, srv.post("/v1/tasks", {"employee_id": emp, "title": "T " + word,
                                                        "description": "Do " + word},
                                          key=key).body, "task")
        self.poll(lambda: strict_json(self, srv.get("/v1/tasks/" + task["id"], key=key).body,
                                      "task")["status"] in ("completed", "failed"), "task run")

        # Stop, damage every free-text column, start again.
        self.assertEqual(srv.stop(), 0)
        db = sqlite3.connect(srv.db)
        damaged = []
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'"
                                           " AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE"
                                           " '%VIRTUAL%'")]
        for t in tables:
            for col in db.execute("PRAGMA table_info(%s)" % t).fetchall():
                if col[1] in TEXT_COLUMNS and "%s.%s" % (t, col[1]) not in ENUM_COLUMNS:
                    db.execute("UPDATE %s SET %s = %s || CAST(X'FFFE41E282' AS TEXT)"
                               " WHERE %s IS NOT NULL" % (t, col[1], col[1], col[1]))
                    damaged.append("%s.%s" % (t, col[1]))
        db.commit()
        db.close()
        self.assertIn("documents.name", damaged)
        self.assertIn("messages.content", damaged)
        self.assertIn("chunks.content", damaged)
        srv.start()

        reads = ["/v1/employees", "/v1/employees/" + emp, "/v1/conversations",
                 "/v1/conversations/" + conv, DOCS, DOCS + "/" + doc["id"], "/v1/tasks",
                 "/v1/tasks/" + task["id"], "/v1/tasks/" + task["id"] + "/runs", "/v1/account"]
        for path in reads:
            with self.subTest(path=path):
                r = srv.get(path, key=key)
                self.assertEqual(r.status, 200, r)
                strict_json(self, r.body, path)
        r = srv.post(QUERY, {"query": word}, key=key)
        hits = strict_json(self, r.body, "query")["results"]
        self.assertTrue(hits, r)
        self.assertIn("\ufffd", hits[0]["document_name"])
        self.assertIn("\ufffd", hits[0]["content"])
        r = srv.post("/v1/chat", {"employee_id": emp, "message": "What is the %s?" % word,
                                  "conversation_id": conv}, key=key)
        reply = strict_json(self, r.body, "chat")
        self.assertEqual(r.status, 200, reply)
        self.assertTrue(reply.get("sources"), reply)
        r = srv.request("POST", "/v1/chat/stream", key=key,
                        json_body={"employee_id": emp, "message": "What is the %s?" % word},
                        headers={"Accept": "text/event-stream"})
        self.assertEqual(r.status, 200, r)
        text = r.body.decode("utf-8")  # strict: raises on an invalid byte
        events = [ln[5:].strip() for ln in text.split("\n") if ln.startswith("data:")]
        self.assertTrue(events, text[:300])
        for data in events:
            json.loads(data)
        r = srv.get("/v1/conversations/" + conv, key=key)
        strict_json(self, r.body, "conversation after")
